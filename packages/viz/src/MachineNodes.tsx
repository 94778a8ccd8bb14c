import { formatBytes, formatCpuList, formatGBps } from './format.js';
import { nodeColor } from './palette.js';

export interface MachineNodeInfo {
  id: number;
  cpus: readonly number[];
  memoryBytes: number | null;
  /** Theoretical peak memory bandwidth (the machine description's), GB/s. */
  memoryBandwidthGBps?: number | null;
  /** The sustained capacity the engine models (its traffic model: the figure every analysis uses), GB/s, and where it came from. */
  sustainedGBps?: number | null;
  sustainedSource?: string;
}

export interface MachineNodesProps {
  nodes: readonly MachineNodeInfo[];
}

/** One card per NUMA node: its colour, cpus, memory and memory-controller bandwidth. */
export function MachineNodes({ nodes }: MachineNodesProps) {
  const ids = nodes.map((n) => n.id);
  return (
    <ul className="ns-node-cards" aria-label="NUMA nodes">
      {nodes.map((n) => (
        <li key={n.id} className="ns-node-card" data-testid={`machine-node-${n.id}`}>
          <span className="ns-swatch" style={{ background: nodeColor(n.id, ids) }} aria-hidden="true" />
          <span className="ns-node-card__name">node {n.id}</span>
          <dl>
            <dt>cpus</dt>
            <dd data-testid={`machine-node-${n.id}-cpus`} data-value={n.cpus.length}>
              {n.cpus.length === 0 ? 'none (memory only)' : `${formatCpuList(n.cpus)} (${n.cpus.length} cpu${n.cpus.length === 1 ? '' : 's'})`}
            </dd>
            <dt>memory</dt>
            <dd data-testid={`machine-node-${n.id}-memory`} data-value={n.memoryBytes ?? ''}>
              {formatBytes(n.memoryBytes)}
            </dd>
            {n.sustainedGBps !== undefined && (
              <>
                <dt>sustained bandwidth</dt>
                <dd data-testid={`machine-node-${n.id}-sustained`} data-value={n.sustainedGBps ?? ''} title={n.sustainedSource}>
                  {formatGBps(n.sustainedGBps)}
                </dd>
              </>
            )}
            {n.memoryBandwidthGBps !== undefined && (
              <>
                <dt>{n.sustainedGBps !== undefined ? 'peak (theoretical)' : 'bandwidth'}</dt>
                <dd data-testid={`machine-node-${n.id}-peak`} data-value={n.memoryBandwidthGBps ?? ''}>
                  {formatGBps(n.memoryBandwidthGBps)}
                </dd>
              </>
            )}
          </dl>
        </li>
      ))}
    </ul>
  );
}
