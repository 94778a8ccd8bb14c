import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { LatencyCurveChart } from '../src/index.js';

afterEach(cleanup);

const POINTS = [
  { loadThreads: 0, deliveredGBps: 0, latencyNs: 93 },
  { loadThreads: 1, deliveredGBps: 11.8, latencyNs: 118 },
  { loadThreads: 3, deliveredGBps: 30.2, latencyNs: 240 },
];

describe('LatencyCurveChart', () => {
  it('draws one marker per point on D3 scales, higher latency higher up, and axes with units', () => {
    render(<LatencyCurveChart memoryNode={1} points={POINTS} testId="curve" />);
    const fig = screen.getByTestId('curve');
    expect(fig.dataset.points).toBe('3');
    const circles = [...fig.querySelectorAll('circle')];
    expect(circles.map((c) => c.dataset.load)).toEqual(['0', '1', '3']);
    const cx = circles.map((c) => Number(c.getAttribute('cx')));
    const cy = circles.map((c) => Number(c.getAttribute('cy')));
    expect(cx[0]! < cx[1]! && cx[1]! < cx[2]!).toBe(true);
    expect(cy[0]! > cy[1]! && cy[1]! > cy[2]!).toBe(true);
    expect(fig.textContent).toContain('delivered bandwidth (GB/s)');
    expect(fig.textContent).toContain('latency (ns)');
    expect(fig.textContent).toContain('Loaded latency, memory node 1');
    expect(screen.getByTestId('curve-line')).toBeTruthy();
    expect(screen.getByRole('img').getAttribute('aria-label')).toContain('3 load threads: 30.2 GB/s delivered, 240 ns');
  });

  it('a single point draws no line and still reads', () => {
    render(<LatencyCurveChart memoryNode={0} points={POINTS.slice(0, 1)} testId="one" />);
    expect(screen.getByTestId('one').querySelectorAll('circle').length).toBe(1);
    expect(screen.queryByTestId('curve-line')).toBeNull();
  });
});
