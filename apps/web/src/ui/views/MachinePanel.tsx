import { DistanceMatrix, LinkDiagram, MachineNodes, formatBytes, formatCount, formatGBps } from '@numascope/viz';
import type { TraceManifest } from '@numascope/policy-engine';
import { nodeBandwidthFigures } from '../selectors/machine';

/** The machine the trace was recorded on (or modelled): nodes, cpus, memory, links, distances, and where each number came from. */
export function MachinePanel({ manifest }: { manifest: TraceManifest }) {
  const m = manifest.machine;
  const nodeIds = m.nodes.map((n) => n.id);
  const cpus = m.nodes.reduce((n, node) => n + node.cpus.length, 0);
  const memory = m.nodes.every((n) => n.memoryBytes !== null)
    ? m.nodes.reduce((n, node) => n + (node.memoryBytes ?? 0), 0)
    : null;
  const provenance = Object.entries(m.provenance);
  return (
    <section className="panel" aria-labelledby="machine-heading" id="machine">
      <h2 id="machine-heading">Machine</h2>
      <dl className="facts">
        <div>
          <dt>name</dt>
          <dd data-testid="machine-name">{m.name}</dd>
        </div>
        <div>
          <dt>NUMA nodes</dt>
          <dd data-testid="machine-node-count" data-value={m.nodes.length}>
            {formatCount(m.nodes.length, 'node')}
          </dd>
        </div>
        <div>
          <dt>cpus</dt>
          <dd data-testid="machine-cpu-count" data-value={cpus}>
            {formatCount(cpus, 'cpu')}
          </dd>
        </div>
        <div>
          <dt>memory</dt>
          <dd>{formatBytes(memory)}</dd>
        </div>
        <div>
          <dt>page size</dt>
          <dd>{formatBytes(m.pageSizeBytes)}</dd>
        </div>
        <div>
          <dt>description from</dt>
          <dd>
            <code>{m.source}</code>
          </dd>
        </div>
        {m.cpuModel && (
          <div>
            <dt>cpu model</dt>
            <dd>{m.cpuModel}</dd>
          </div>
        )}
        {(typeof m.cpuClockGHz === 'number' || m.provenance['cpuClockGHz']) && (
          <div>
            <dt>cpu clock</dt>
            <dd data-testid="machine-cpu-clock" title={m.provenance['cpuClockGHz']}>
              {typeof m.cpuClockGHz === 'number' ? `${m.cpuClockGHz} GHz` : 'unknown'}
            </dd>
          </div>
        )}
        {m.kernel && (
          <div>
            <dt>kernel</dt>
            <dd>{m.kernel}</dd>
          </div>
        )}
      </dl>
      <h3>Nodes</h3>
      <MachineNodes nodes={nodeBandwidthFigures(manifest)} />
      <div className="machine-grid">
        <div>
          <h3>Distances</h3>
          <DistanceMatrix nodeIds={nodeIds} distances={m.distances} latenciesNs={m.latenciesNs} />
        </div>
        <div>
          <h3>Interconnect links</h3>
          {m.links.length === 0 ? (
            <p className="ns-muted" data-testid="no-links">
              {m.nodes.length === 1 ? 'One node: no interconnect links.' : 'The trace does not describe the interconnect links.'}
            </p>
          ) : (
            <div className="links">
              <LinkDiagram nodeIds={nodeIds} links={m.links} />
              <table className="data" data-testid="links-table">
                <thead>
                  <tr>
                    <th scope="col">link</th>
                    <th scope="col">from → to</th>
                    <th scope="col">capacity</th>
                  </tr>
                </thead>
                <tbody>
                  {m.links.map((l, i) => (
                    <tr key={i}>
                      <td>{i}</td>
                      <td>
                        node {l.from} → node {l.to}
                      </td>
                      <td>{formatGBps(l.capacityGBps)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      </div>
      {provenance.length > 0 && (
        <>
          <h3>Where these numbers came from</h3>
          <dl className="provenance">
            {provenance.map(([field, how]) => (
              <div key={field}>
                <dt>{field}</dt>
                <dd>
                  <Provenance value={how} />
                </dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </section>
  );
}

/** `estimated:<rule>` → an "estimated" tag and the rule in words. */
function Provenance({ value }: { value: string }) {
  const m = /^(measured|documented|estimated|unavailable):\s*(.*)$/s.exec(value);
  if (!m) return <span>{value}</span>;
  return (
    <>
      <span className={`prov prov--${m[1]}`}>{m[1]}</span> {m[2]}
    </>
  );
}
