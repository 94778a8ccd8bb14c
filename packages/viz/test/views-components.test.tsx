import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AddressHeatmap, HeatTable, WindowTimeline, heatmapCell, keyboardStep, pageStep, heatmapResolution, markedRows, stackWindows, windowsToRange, zoomPages } from '../src/index.js';
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

describe('WindowTimeline keyboard steps scale with the trace', () => {
  // 200 windows of 10 ms (a 2 s trace): arrows step 4 windows, pages 50.
  const values = new Array<number>(400).fill(1);
  function timeline(range: { fromUs: number; toUs: number } | null) {
    const onRange = vi.fn();
    render(<WindowTimeline windowUs={10_000} windows={200} values={values} nodeIds={[0]} metric="samples" range={range} onRange={onRange} />);
    const press = (key: string, mods: { shiftKey?: boolean; altKey?: boolean } = {}) => {
      fireEvent.keyDown(screen.getByRole('slider'), { key, ...mods });
      return onRange.mock.lastCall?.[0] as { fromUs: number; toUs: number } | null;
    };
    return { press };
  }
  afterEach(cleanup);

  it('steps are 2 % and 25 % of the trace, at least one window', () => {
    expect(keyboardStep(200)).toBe(4);
    expect(pageStep(200)).toBe(50);
    expect(keyboardStep(19)).toBe(1);
    expect(pageStep(3)).toBe(1);
  });
  it('half the trace is two presses away: Home, then Shift+PageDown', () => {
    const { press } = timeline(null);
    expect(press('Home')).toEqual({ fromUs: 0, toUs: 500_000 });
    cleanup();
    expect(timeline({ fromUs: 0, toUs: 500_000 }).press('PageDown', { shiftKey: true })).toEqual({ fromUs: 0, toUs: 1_000_000 });
  });
  it('from a quarter, Shift+PageDown grows it to half; PageDown moves it by a quarter; End keeps the length', () => {
    const quarter = { fromUs: 0, toUs: 500_000 };
    expect(timeline(quarter).press('PageDown', { shiftKey: true })).toEqual({ fromUs: 0, toUs: 1_000_000 });
    cleanup();
    expect(timeline(quarter).press('PageDown')).toEqual({ fromUs: 500_000, toUs: 1_000_000 });
    cleanup();
    expect(timeline(quarter).press('End')).toEqual({ fromUs: 1_500_000, toUs: 2_000_000 });
    cleanup();
    expect(timeline({ fromUs: 500_000, toUs: 600_000 }).press('End', { shiftKey: true })).toEqual({ fromUs: 500_000, toUs: 2_000_000 });
  });
  it('arrows move by a step, Alt+arrows by one window, and stop at the ends', () => {
    expect(timeline(null).press('ArrowRight')).toEqual({ fromUs: 0, toUs: 40_000 });
    cleanup();
    expect(timeline({ fromUs: 0, toUs: 40_000 }).press('ArrowRight', { altKey: true })).toEqual({ fromUs: 10_000, toUs: 50_000 });
    cleanup();
    expect(timeline({ fromUs: 1_980_000, toUs: 2_000_000 }).press('ArrowRight')).toEqual({ fromUs: 1_980_000, toUs: 2_000_000 });
    cleanup();
    expect(timeline({ fromUs: 0, toUs: 100_000 }).press('ArrowLeft', { shiftKey: true })).toEqual({ fromUs: 0, toUs: 60_000 });
  });
  it('PageUp/PageDown move the selection by its own length, stopping at the ends', () => {
    const short = { fromUs: 300_000, toUs: 400_000 }; // 10 windows
    expect(timeline(short).press('PageDown')).toEqual({ fromUs: 400_000, toUs: 500_000 });
    cleanup();
    expect(timeline(short).press('PageUp')).toEqual({ fromUs: 200_000, toUs: 300_000 });
    cleanup();
    expect(timeline({ fromUs: 1_950_000, toUs: 2_000_000 }).press('PageDown')).toEqual({ fromUs: 1_950_000, toUs: 2_000_000 });
  });
});

describe('WindowTimeline zoomed into a domain', () => {
  // 200 windows of 10 ms; the domain is windows 50–149 (0.5 s – 1.5 s).
  const values = new Array<number>(400).fill(1);
  const domain = { fromUs: 500_000, toUs: 1_500_000 };
  function zoomed(range: { fromUs: number; toUs: number } | null) {
    const onRange = vi.fn();
    render(<WindowTimeline windowUs={10_000} windows={200} values={values} nodeIds={[0]} metric="samples" range={range} domain={domain} onRange={onRange} />);
    const press = (key: string, mods: { shiftKey?: boolean } = {}) => {
      fireEvent.keyDown(screen.getByRole('slider'), { key, ...mods });
      return onRange.mock.lastCall?.[0] as { fromUs: number; toUs: number } | null;
    };
    return { press };
  }
  it('shows and steps within the domain: the keys scale with it, Home/End are its ends', () => {
    const { press } = zoomed(domain);
    const el = screen.getByTestId('timeline');
    expect(el.dataset.domainFrom).toBe('500000');
    expect(el.dataset.domainTo).toBe('1500000');
    // The whole domain selected counts as none: Home selects its first quarter (25 of its 100 windows).
    expect(press('Home')).toEqual({ fromUs: 500_000, toUs: 750_000 });
    cleanup();
    expect(zoomed({ fromUs: 600_000, toUs: 700_000 }).press('End')).toEqual({ fromUs: 1_400_000, toUs: 1_500_000 });
    cleanup();
    expect(zoomed({ fromUs: 500_000, toUs: 600_000 }).press('ArrowLeft')).toEqual({ fromUs: 500_000, toUs: 600_000 });
  });
  it('the y scale is the tallest stack in the domain', () => {
    const v = new Array<number>(400).fill(1);
    v[0] = 1000; // window 0, outside the domain
    expect(stackWindows(v, 200, 2).max).toBe(1001);
    expect(stackWindows(v, 200, 2, 50, 150).max).toBe(2);
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
  it('keyboard: arrow keys move a visible focused cell whose value is read out with units; Enter and Space select it', () => {
    const onSelect = vi.fn();
    render(<AddressHeatmap grid={grid} nodeIds={[0, 1]} onZoom={vi.fn()} onSelect={onSelect} regionName={(r) => `region-${r}`} />);
    const canvas = screen.getByRole('img');
    expect(canvas.tabIndex).toBe(0);
    const readout = screen.getByTestId('heatmap-cell');
    expect(readout.getAttribute('aria-live')).toBe('polite');
    expect(screen.queryByTestId('heatmap-focus')).toBeNull();
    fireEvent.focus(canvas);
    // Starts on the hottest cell: row 2, column 2 (4 samples, mostly from node 0).
    expect(screen.getByTestId('heatmap-focus')).toBeTruthy();
    expect(readout.dataset.value).toBe('4');
    expect(readout.textContent).toBe('Cell row 2 of 2, column 2 of 2: 0x5000 (region-1), 50 µs–100 µs: 4 samples, mostly from node 0');
    fireEvent.keyDown(canvas, { key: 'ArrowLeft' });
    expect([readout.dataset.row, readout.dataset.col, readout.dataset.value]).toEqual(['1', '0', '0']);
    expect(readout.textContent).toContain('0 samples');
    fireEvent.keyDown(canvas, { key: 'ArrowUp' });
    expect([readout.dataset.row, readout.dataset.col, readout.dataset.value]).toEqual(['0', '0', '1']);
    expect(readout.textContent).toBe('Cell row 1 of 2, column 1 of 2: 0x1000 (region-0), 0 µs–50 µs: 1 sample, mostly from node 0');
    fireEvent.keyDown(canvas, { key: 'ArrowUp' }); // stays in the grid (not zoomed: nothing to pan)
    expect(readout.dataset.row).toBe('0');
    fireEvent.keyDown(canvas, { key: 'Enter' });
    expect(onSelect).toHaveBeenLastCalledWith({ row: 0, col: 0, region: 0, rankLo: 0, rankHi: 4, fromUs: 0, toUs: 50, value: 1 });
    fireEvent.keyDown(canvas, { key: 'End' });
    fireEvent.keyDown(canvas, { key: ' ' });
    expect(onSelect).toHaveBeenLastCalledWith({ row: 0, col: 1, region: 0, rankLo: 0, rankHi: 4, fromUs: 50, toUs: 100, value: 2 });
    fireEvent.blur(canvas);
    expect(screen.queryByTestId('heatmap-focus')).toBeNull();
  });
  it('a click on a cell (no band dragged) selects it, as Enter does', () => {
    const onSelect = vi.fn();
    const onZoom = vi.fn();
    render(<AddressHeatmap grid={grid} nodeIds={[0, 1]} onZoom={onZoom} onSelect={onSelect} />);
    const canvas = screen.getByRole('img');
    // Default 960×380: plot from x 120 (2 columns of 414 px), y 6 (2 rows of 175 px).
    fireEvent.pointerDown(canvas, { button: 0, clientX: 600, clientY: 200, pointerId: 1 });
    fireEvent.pointerUp(canvas, { button: 0, clientX: 600, clientY: 200, pointerId: 1 });
    expect(onSelect).toHaveBeenLastCalledWith({ row: 1, col: 1, region: 1, rankLo: 4, rankHi: 8, fromUs: 50, toUs: 100, value: 4 });
    expect(onZoom).not.toHaveBeenCalled();
  });
  it('keyboard pans with PageUp/PageDown and past the edge when zoomed', () => {
    const onZoom = vi.fn();
    const zoomed: HeatmapGrid = { ...grid, rankLo: 2, rankHi: 6 };
    render(<AddressHeatmap grid={zoomed} nodeIds={[0, 1]} onZoom={onZoom} />);
    const canvas = screen.getByRole('img');
    fireEvent.focus(canvas);
    fireEvent.keyDown(canvas, { key: 'PageDown' });
    expect(onZoom).toHaveBeenLastCalledWith({ lo: 3, hi: 7 });
    fireEvent.keyDown(canvas, { key: 'ArrowDown' }); // focus is on the last row already (hottest cell): pans
    expect(onZoom).toHaveBeenLastCalledWith({ lo: 3, hi: 7 });
    expect(onZoom).toHaveBeenCalledTimes(2);
    fireEvent.keyDown(canvas, { key: 'PageUp' });
    expect(onZoom).toHaveBeenLastCalledWith({ lo: 1, hi: 5 });
  });
  it('marks the rows holding marked pages, and a cell knows its pages', () => {
    expect(Array.from(markedRows(grid, [5, 6, 9]).rows)).toEqual([0, 1]);
    expect(markedRows(grid, [5, 6, 9]).inView).toBe(2);
    expect(heatmapCell(grid, 1, 0)).toMatchObject({ rankLo: 4, rankHi: 8, region: 1 });
    render(<AddressHeatmap grid={grid} nodeIds={[0, 1]} onZoom={vi.fn()} marks={Int32Array.from([0, 1])} />);
    expect(screen.getByTestId('heatmap').dataset.markedRows).toBe('1');
    expect(screen.getByTestId('heatmap').dataset.markedPages).toBe('2');
  });
  it('zoom arithmetic stays inside the pages, and the resolution is at most one cell per pixel', () => {
    expect(zoomPages(0, 100, 0.5, 90, 100)).toEqual({ lo: 45, hi: 95 });
    expect(zoomPages(0, 50, 4, 10, 100)).toBeNull();
    const r = heatmapResolution(960, 380);
    expect(r.rows).toBeLessThanOrEqual(380);
    expect(r.cols).toBeLessThanOrEqual(960);
  });
});
