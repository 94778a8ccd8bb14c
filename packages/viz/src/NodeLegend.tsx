import { nodeColor, nodeLabel } from './palette.js';

export interface NodeLegendProps {
  nodeIds: readonly number[];
  /** Add the grey "unknown node" entry. */
  includeUnknown?: boolean;
}

/** Colour key for node-coloured charts. */
export function NodeLegend({ nodeIds, includeUnknown = false }: NodeLegendProps) {
  const entries = includeUnknown ? [...nodeIds, -1] : nodeIds;
  return (
    <ul className="ns-legend" aria-label="Node colours">
      {entries.map((id) => (
        <li key={id}>
          <span className="ns-swatch" style={{ background: nodeColor(id, nodeIds) }} aria-hidden="true" />
          {nodeLabel(id)}
        </li>
      ))}
    </ul>
  );
}
