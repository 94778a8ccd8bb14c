import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AddressHeatmap, HeatTable, WindowTimeline, heatmapResolution, stackWindows, windowsToRange, zoomPages } from '../src/index.js';
import type { HeatmapGrid } from '../src/index.js';

afterEach(cleanup);

describe('WindowTimeline', () => {
  it('stacks windows by node and brushes by keyboard, snapped to windows', () => {
    // 3 windows, 1 node + unknown.
    const values = [1, 0, 2, 3, 0, 1];
    expect(stackWindows(values, 3, 2).max).toBe(5);
    expect(windowsToRange(2, 0, 10)).toEqual({ fromUs: 0, toUs: 30 });
    const onRange = vi.fn();
    const { rerender } = render(<WindowTimeline windowUs={10} windows={3} values={values} nodeIds={[0]} metric="samples" range={null} onRange={onRange} />);
    const svg = screen.getByRole('slider');
    fireEvent.keyDown(svg, { key: 'ArrowRight' });
    expect(onRange).toHaveBeenLastCalledWith({ fromUs: 0, toUs: 10 });
    rerender(<WindowTimeline windowUs={10} windows={3} values={values} nodeIds={[0]} metric="samples" range={{ fromUs: 0, toUs: 10 }} onRange={onRange} />);
    fireEvent.keyDown(svg, { key: 'ArrowRight', shiftKey: true });
    expect(onRange).toHaveBeenLastCalledWith({ fromUs: 0, toUs: 20 });
    fireEvent.keyDown(svg, { key: 'ArrowRight' });
    expect(onRange).toHaveBeenLastCalledWith({ fromUs: 10, toUs: 20 });
    fireEvent.keyDown(svg, { key: 'Escape' });
    expect(onRange).toHaveBeenLastCalledWith(null);
    expect(screen.getByTestId('timeline').dataset.from).toBe('0');
  });
});

describe('HeatTable', () => {
  it('writes every number and keys cells by row and column', () => {
    render(<HeatTable caption="c" rowHeader="thread" rowLabels={['a', 'b']} columnLabels={['node 0', 'unknown']} values={[1, 2, 3, 1234]} testId="m" columnKeys={['0', 'unknown']} />);
    expect(screen.getByTestId('m-1-unknown').textContent).toBe('1,234');
    expect(screen.getByTestId('m-0-0').dataset.value).toBe('1');
  });
});

describe('AddressHeatmap', () => {
  const grid: HeatmapGrid = {
    mode: 'node', rows: 2, cols: 2, fromUs: 0, toUs: 100, rankLo: 0, rankHi: 8, values: [1, 2, 0, 4], dominant: [0, 1, 2, 0],
    rowAddress: [0x1000, 0x5000], rowRegion: [0, 1], max: 4, total: 7, pageCount: 8,
  };
  it('zooms with buttons and the keyboard, and says what it shows', () => {
    const onZoom = vi.fn();
    render(<AddressHeatmap grid={grid} nodeIds={[0, 1]} onZoom={onZoom} />);
    expect(screen.getByTestId('heatmap').dataset.total).toBe('7');
    fireEvent.click(screen.getByTestId('heatmap-zoom-in'));
    expect(onZoom).toHaveBeenLastCalledWith({ lo: 2, hi: 6 });
    fireEvent.keyDown(screen.getByRole('img'), { key: '+' });
    expect(onZoom).toHaveBeenCalledTimes(2);
    expect(screen.getByRole('img').getAttribute('aria-label')).toContain('7 samples');
  });
  it('zoom arithmetic stays inside the pages, and the resolution is at most one cell per pixel', () => {
    expect(zoomPages(0, 100, 0.5, 90, 100)).toEqual({ lo: 45, hi: 95 });
    expect(zoomPages(0, 50, 4, 10, 100)).toBeNull();
    const r = heatmapResolution(960, 380);
    expect(r.rows).toBeLessThanOrEqual(380);
    expect(r.cols).toBeLessThanOrEqual(960);
  });
});
