import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FlameGraph, flameChildren, flameColor, flameLayout, flameNeighbour, flameRectAt } from '../src/index.js';
import type { FlameNode } from '../src/index.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

/** all 100 = main 80 (init_a 50, init_b 20, self 10) + worker 20 (fill 15, self 5). */
const TREE: FlameNode[] = [
  { name: 'all', parent: -1, self: 0, total: 100 },
  { name: 'main', location: 'app.c:50', parent: 0, self: 10, total: 80 },
  { name: 'init_b', location: 'app.c:20', parent: 1, self: 20, total: 20 },
  { name: 'worker', parent: 0, self: 5, total: 20 },
  { name: 'init_a', location: 'app.c:10', parent: 1, self: 50, total: 50 },
  { name: 'fill', parent: 3, self: 15, total: 15 },
];

const box = (l: ReturnType<typeof flameLayout>, node: number) => {
  const r = l.rects[l.rectOf[node]!]!;
  return [r.x, r.y, r.width, r.row];
};

describe('flameLayout', () => {
  it('root at the top, widths proportional to total weight, children heaviest first from the parent\'s left edge', () => {
    expect(flameChildren(TREE)[1]).toEqual([4, 2]);
    const l = flameLayout(TREE, { width: 200, rowHeight: 10 });
    expect(l.rows).toBe(3);
    expect(l.rects).toHaveLength(6);
    expect(box(l, 0)).toEqual([0, 0, 200, 0]);
    expect(box(l, 1)).toEqual([0, 10, 160, 1]);
    expect(box(l, 3)).toEqual([160, 10, 40, 1]);
    expect(box(l, 4)).toEqual([0, 20, 100, 2]);
    expect(box(l, 2)).toEqual([100, 20, 40, 2]);
    expect(box(l, 5)).toEqual([160, 20, 30, 2]);
    // A child never spans more than its parent; self weight is the gap after the children.
    expect(flameRectAt(l, 150, 25)).toBeNull();
    expect(flameRectAt(l, 150, 15)!.node).toBe(1);
    expect(flameRectAt(l, 199, 5)!.node).toBe(0);
  });

  it('zoomed into a node: it spans the width, its ancestors above it, only its descendants below', () => {
    const l = flameLayout(TREE, { width: 200, rowHeight: 10, zoom: 1 });
    expect(l.zoom).toBe(1);
    expect(box(l, 0)).toEqual([0, 0, 200, 0]);
    expect(l.rects[l.rectOf[0]!]!.ancestor).toBe(true);
    expect(box(l, 1)).toEqual([0, 10, 200, 1]);
    expect(box(l, 4)).toEqual([0, 20, 125, 2]);
    expect(box(l, 2)).toEqual([125, 20, 50, 2]);
    expect(l.rectOf[3]).toBe(-1);
    expect(l.rectOf[5]).toBe(-1);
    // An out-of-range zoom is the root.
    expect(flameLayout(TREE, { width: 200, rowHeight: 10, zoom: 99 }).zoom).toBe(0);
  });

  it('drops frames narrower than minWidth, with their children', () => {
    const l = flameLayout(TREE, { width: 200, rowHeight: 10, minWidth: 35 });
    expect(l.rectOf[5]).toBe(-1);
    expect(l.rectOf[3]).toBeGreaterThanOrEqual(0);
    expect(flameLayout(TREE, { width: 200, rowHeight: 10, minWidth: 45 }).rectOf[5]).toBe(-1);
  });

  it('keyboard neighbours: parent, heaviest child, and across subtrees in a row', () => {
    const l = flameLayout(TREE, { width: 200, rowHeight: 10 });
    const kids = flameChildren(TREE);
    expect(flameNeighbour(l, TREE, kids, 0, 'child')).toBe(1);
    expect(flameNeighbour(l, TREE, kids, 1, 'child')).toBe(4);
    expect(flameNeighbour(l, TREE, kids, 4, 'next')).toBe(2);
    expect(flameNeighbour(l, TREE, kids, 2, 'next')).toBe(5);
    expect(flameNeighbour(l, TREE, kids, 5, 'previous')).toBe(2);
    expect(flameNeighbour(l, TREE, kids, 5, 'parent')).toBe(3);
    expect(flameNeighbour(l, TREE, kids, 0, 'parent')).toBe(0);
    expect(flameNeighbour(l, TREE, kids, 5, 'next')).toBe(5);
  });

  it('a colour per name, the same every time', () => {
    expect(flameColor('init_a')).toBe(flameColor('init_a'));
    expect(flameColor('init_a')).toMatch(/^hsl\(\d+, \d+%, \d+%\)$/);
  });
});

describe('FlameGraph', () => {
  it('the keyboard moves a focused frame whose name, location and weights are read out; Enter zooms, Escape resets', () => {
    const onZoom = vi.fn();
    render(<FlameGraph nodes={TREE} width={200} rowHeight={10} unit="first touches" onZoom={onZoom} />);
    const canvas = screen.getByRole('img');
    const frame = screen.getByTestId('flame-graph-frame');
    expect(frame.textContent).toMatch(/Focus the flame graph/);
    fireEvent.focus(canvas);
    expect(frame.dataset.name).toBe('all');
    expect(screen.getByTestId('flame-graph-focus')).toBeTruthy();
    fireEvent.keyDown(canvas, { key: 'ArrowDown' });
    fireEvent.keyDown(canvas, { key: 'ArrowDown' });
    fireEvent.keyDown(canvas, { key: 'ArrowRight' });
    expect(frame.dataset.name).toBe('init_b');
    expect(frame.textContent).toBe('init_b (app.c:20): total 20 first touches (20.0%), self 20 (20.0%)');
    fireEvent.keyDown(canvas, { key: 'ArrowUp' });
    fireEvent.keyDown(canvas, { key: 'Enter' });
    expect(onZoom).toHaveBeenLastCalledWith(1);
    expect(screen.getByTestId('flame-graph').dataset.zoom).toBe('1');
    expect(screen.getByTestId('flame-graph-zoomed').textContent).toMatch(/zoomed into main/);
    fireEvent.keyDown(canvas, { key: 'Escape' });
    expect(screen.getByTestId('flame-graph').dataset.zoom).toBe('0');
  });

  it('click zooms into the frame under the pointer (and into an ancestor to go back out); Reset zoom', () => {
    render(<FlameGraph nodes={TREE} width={200} rowHeight={10} />);
    const canvas = screen.getByRole('img');
    const root = screen.getByTestId('flame-graph');
    const reset = screen.getByTestId('flame-graph-reset') as HTMLButtonElement;
    expect(reset.disabled).toBe(true);
    fireEvent.click(canvas, { clientX: 170, clientY: 15 });
    expect(root.dataset.zoom).toBe('3');
    expect(root.dataset.rects).toBe('3');
    fireEvent.click(canvas, { clientX: 5, clientY: 5 });
    expect(root.dataset.zoom).toBe('0');
    fireEvent.click(canvas, { clientX: 5, clientY: 15 });
    expect(root.dataset.zoom).toBe('1');
    expect(reset.disabled).toBe(false);
    fireEvent.click(reset);
    expect(root.dataset.zoom).toBe('0');
  });

  it('hover shows the frame in a tooltip', () => {
    render(<FlameGraph nodes={TREE} width={200} rowHeight={10} />);
    fireEvent.pointerMove(screen.getByRole('img'), { clientX: 10, clientY: 25 });
    expect(document.querySelector('.ns-timeline__tooltip')!.textContent).toBe('init_a (app.c:10): total 50 samples (weighted) (50.0%), self 50 (50.0%)');
  });

  it('a new tree (other filters) starts unzoomed', () => {
    const { rerender } = render(<FlameGraph nodes={TREE} width={200} rowHeight={10} />);
    fireEvent.click(screen.getByRole('img'), { clientX: 5, clientY: 15 });
    expect(screen.getByTestId('flame-graph').dataset.zoom).toBe('1');
    rerender(<FlameGraph nodes={TREE.map((n) => ({ ...n }))} width={200} rowHeight={10} />);
    expect(screen.getByTestId('flame-graph').dataset.zoom).toBe('0');
  });
});
