import type { CSSProperties } from 'react';
import { scaleLinear } from 'd3-scale';

export interface DistanceMatrixProps {
  nodeIds: readonly number[];
  /** SLIT distances, [from node index][to node index]; 10 = local. */
  distances: readonly (readonly number[])[];
  /** Idle latency from node i's cpus to node j's memory, ns; null when unknown. */
  latenciesNs?: readonly (readonly number[])[] | null;
  caption?: string;
}

/**
 * The node distance table (ACPI SLIT, as /sys/devices/system/node/nodeN/distance reports it),
 * rows = from, columns = to. Cells are shaded by distance; the number is always written.
 */
export function DistanceMatrix({ nodeIds, distances, latenciesNs, caption }: DistanceMatrixProps) {
  const values = distances.flat();
  const max = values.length ? Math.max(...values) : 10;
  const shade = scaleLinear().domain([10, Math.max(max, 11)]).range([0, 0.55]).clamp(true);
  return (
    <table className="ns-matrix" data-testid="distance-matrix">
      <caption>{caption ?? 'Node distances (SLIT, 10 = local)'}{latenciesNs ? ' and idle latency' : ''}</caption>
      <thead>
        <tr>
          <th scope="col">
            <span className="ns-sr-only">from node, to node</span>
            <span aria-hidden="true">from \ to</span>
          </th>
          {nodeIds.map((id) => (
            <th key={id} scope="col">
              node {id}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {nodeIds.map((from, i) => (
          <tr key={from}>
            <th scope="row">node {from}</th>
            {nodeIds.map((to, j) => {
              const d = distances[i]?.[j];
              const lat = latenciesNs?.[i]?.[j];
              return (
                <td
                  key={to}
                  data-testid={`distance-${from}-${to}`}
                  data-value={d ?? ''}
                  style={{ '--ns-shade': d === undefined ? 0 : shade(d) } as CSSProperties}
                >
                  <span>{d ?? '–'}</span>
                  {lat !== undefined && lat !== null && <span className="ns-matrix__latency">{Math.round(lat)} ns</span>}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
