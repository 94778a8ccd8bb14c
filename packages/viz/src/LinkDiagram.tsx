import { formatGBps } from './format.js';
import { nodeColor, textColorOn } from './palette.js';

export interface LinkInfo {
  from: number;
  to: number;
  capacityGBps: number | null;
}

export interface LinkDiagramProps {
  nodeIds: readonly number[];
  links: readonly LinkInfo[];
  /** Width and height in px; by default it grows with the node count. */
  size?: number;
}

/**
 * Interconnect links between nodes, nodes placed on a circle. A link is directed: the two
 * directions of a pair are drawn side by side, each with its capacity in its tooltip.
 */
export function LinkDiagram({ nodeIds, links, size: sizeProp }: LinkDiagramProps) {
  const size = sizeProp ?? (nodeIds.length <= 2 ? 180 : nodeIds.length <= 4 ? 240 : 300);
  const c = size / 2;
  const radius = nodeIds.length > 1 ? size / 2 - 34 : 0;
  const pos = new Map<number, { x: number; y: number }>();
  nodeIds.forEach((id, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(nodeIds.length, 1);
    pos.set(id, { x: c + radius * Math.cos(angle), y: c + radius * Math.sin(angle) });
  });
  const nodeRadius = Math.max(10, Math.min(22, 120 / Math.max(nodeIds.length, 1)));

  return (
    <svg
      viewBox={`0 0 ${size} ${size}`}
      width={size}
      height={size}
      role="img"
      aria-label={`Interconnect: ${links.length} directed links between ${nodeIds.length} nodes`}
      className="ns-links"
    >
      <defs>
        <marker id="ns-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" className="ns-links__arrow" />
        </marker>
      </defs>
      {links.map((l, i) => {
        const a = pos.get(l.from);
        const b = pos.get(l.to);
        if (!a || !b || l.from === l.to) return null;
        const dx = b.x - a.x;
        const dy = b.y - a.y;
        const len = Math.hypot(dx, dy) || 1;
        const ux = dx / len;
        const uy = dy / len;
        const off = 3; // shift each direction to its own side
        const nx = -uy * off;
        const ny = ux * off;
        return (
          <line
            key={i}
            x1={a.x + ux * nodeRadius + nx}
            y1={a.y + uy * nodeRadius + ny}
            x2={b.x - ux * (nodeRadius + 2) + nx}
            y2={b.y - uy * (nodeRadius + 2) + ny}
            className="ns-links__link"
            markerEnd="url(#ns-arrow)"
          >
            <title>{`node ${l.from} → node ${l.to}: ${formatGBps(l.capacityGBps)}`}</title>
          </line>
        );
      })}
      {nodeIds.map((id) => {
        const p = pos.get(id)!;
        return (
          <g key={id}>
            <circle cx={p.x} cy={p.y} r={nodeRadius} fill={nodeColor(id, nodeIds)} />
            <text x={p.x} y={p.y} textAnchor="middle" dominantBaseline="central" className="ns-links__label" style={{ fill: textColorOn(nodeColor(id, nodeIds)) }}>
              {id}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
