/**
 * Node colours. The first seven are the Okabe–Ito palette (Okabe & Ito, "Color Universal
 * Design", 2008), which stays distinguishable under the common colour-vision deficiencies; a
 * machine with up to 7 nodes only uses those. Nodes 8 to 12 take five colours from Paul Tol's
 * "muted" scheme, chosen to stay apart from the first seven and from the unknown-node grey; they
 * are less separable for colour-blind readers. Past twelve nodes the colours repeat. Every mark
 * that uses them also carries the node id as text (label, tooltip or table).
 */
export const OKABE_ITO = [
  '#0072B2', // blue
  '#E69F00', // orange
  '#009E73', // bluish green
  '#D55E00', // vermillion
  '#56B4E9', // sky blue
  '#CC79A7', // reddish purple
  '#F0E442', // yellow
] as const;

export const NODE_COLORS = [
  ...OKABE_ITO,
  '#882255', // wine (Tol muted)
  '#44AA99', // teal
  '#999933', // olive
  '#AA4499', // purple
  '#6699CC', // light indigo
] as const;

/** Colour for marks whose node is unknown (-1 in the trace). */
export const UNKNOWN_NODE_COLOR = '#8c8c8c';

/**
 * Colour of a node. `nodeIds` is the machine's node list, so colours follow the position of the
 * node on the machine (node ids can have gaps, e.g. a machine with nodes 0, 2 and 4).
 */
export function nodeColor(nodeId: number, nodeIds?: readonly number[]): string {
  if (nodeId < 0) return UNKNOWN_NODE_COLOR;
  const index = nodeIds ? nodeIds.indexOf(nodeId) : nodeId;
  if (index < 0) return UNKNOWN_NODE_COLOR;
  return NODE_COLORS[index % NODE_COLORS.length]!;
}

/** "node 3", or "unknown node" for -1. */
export function nodeLabel(nodeId: number): string {
  return nodeId < 0 ? 'unknown node' : `node ${nodeId}`;
}

/** Black or white, whichever contrasts more with a `#rrggbb` background (WCAG luminance). */
export function textColorOn(hex: string): '#000000' | '#ffffff' {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) return '#000000';
  const lin = (c: string) => {
    const v = parseInt(c, 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  const L = 0.2126 * lin(m[1]!) + 0.7152 * lin(m[2]!) + 0.0722 * lin(m[3]!);
  const onWhite = 1.05 / (L + 0.05);
  const onBlack = (L + 0.05) / 0.05;
  return onWhite > onBlack ? '#ffffff' : '#000000';
}
