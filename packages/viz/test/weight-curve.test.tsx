import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { WeightCurveChart } from '../src/index.js';

afterEach(cleanup);

// A curve of the engine's shape on a DRAM + CXL machine: 1:1 is slower than DRAM only, about 90 % on DRAM is best.
const POINTS = [
  { dramShare: 0, timeVsDramOnly: 4.2 },
  { dramShare: 0.5, timeVsDramOnly: 1.9 },
  { dramShare: 0.8, timeVsDramOnly: 1.02 },
  { dramShare: 0.9, timeVsDramOnly: 0.93 },
  { dramShare: 0.95, timeVsDramOnly: 0.95 },
  { dramShare: 1, timeVsDramOnly: 1 },
];

const props = {
  points: POINTS,
  optimum: { dramShare: 0.9, timeVsDramOnly: 0.93 },
  recommended: { dramShare: 0.9, timeVsDramOnly: 0.93, label: 'weights 9:1' },
  bandwidthRatio: { dramShare: 0.8966, timeVsDramOnly: 0.931, label: 'weights 26:3' },
  flat: { band: 0.05, fromShare: 0.85, toShare: 1 },
};

describe('WeightCurveChart', () => {
  it('draws the curve on D3 scales (more DRAM further right, slower higher up), the band and the marks, with axes in their units', () => {
    render(<WeightCurveChart {...props} testId="wc" />);
    const fig = screen.getByTestId('wc');
    expect(fig.dataset.points).toBe('6');
    const d = screen.getByTestId('weight-curve-line').getAttribute('d')!;
    // One move then one line per further point, in share order.
    expect((d.match(/[ML]/g) ?? []).length).toBe(6);
    const coords = [...d.matchAll(/[ML]([\d.]+),([\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
    expect(coords.map((c) => c[0])).toEqual([...coords.map((c) => c[0])].sort((a, b) => a - b));
    // 4.2× at 0 % is drawn above (smaller y) the 0.93 minimum at 90 %.
    expect(coords[0]![1]).toBeLessThan(coords[3]![1]);

    const optimum = screen.getByTestId('weight-optimum');
    expect(Number(optimum.getAttribute('cx'))).toBeCloseTo(coords[3]![0], 0);
    expect(Number(optimum.getAttribute('cy'))).toBeCloseTo(coords[3]![1], 0);
    expect(screen.getByTestId('weight-recommended').dataset.share).toBe('0.9');
    expect(screen.getByTestId('weight-bandwidth-ratio').textContent).toContain('bandwidth-ratio start weights 26:3: 89.7% on DRAM: 0.93 of DRAM-only time');

    // The band spans 85 %–100 % of the x axis: its left edge right of the 0.8 point's, its right edge at 100 %.
    const band = screen.getByTestId('weight-flat-band');
    const bx = Number(band.getAttribute('x'));
    const bw = Number(band.getAttribute('width'));
    expect(bx).toBeGreaterThan(coords[2]![0]);
    expect(bx).toBeLessThan(coords[3]![0]);
    expect(bx + bw).toBeCloseTo(coords[5]![0], 0);

    // DRAM only (1.00) is a dashed reference line at the 100 % point's height.
    expect(Number(screen.getByTestId('weight-dram-only').getAttribute('y1'))).toBeCloseTo(coords[5]![1], 0);

    expect(fig.textContent).toContain('pages on DRAM (%)');
    expect(fig.textContent).toContain('time ÷ DRAM-only time');
    expect(fig.textContent).toContain('0%');
    expect(fig.textContent).toContain('100%');
  });

  it('is labelled for assistive technology: title and description name the optimum, the recommendation, the start and the band', () => {
    render(<WeightCurveChart {...props} testId="wc" title="Weighted interleave on dram-cxl-1s" />);
    const img = screen.getByRole('img');
    expect(img.getAttribute('aria-labelledby')).toBe('wc-title wc-desc');
    expect(document.getElementById('wc-title')!.textContent).toBe('Weighted interleave on dram-cxl-1s');
    const desc = document.getElementById('wc-desc')!.textContent!;
    expect(desc).toContain('Optimum: 90.0% on DRAM: 0.93 of DRAM-only time.');
    expect(desc).toContain('Recommended weights 9:1');
    expect(desc).toContain('Flat (within 5% of the optimum) from 85.0% to 100.0% on DRAM.');
    expect(desc).toContain('6 points from 0.0% to 100.0%');
  });

  it('without a test id the description is the aria-label; a single point draws no line but keeps the marks', () => {
    render(<WeightCurveChart {...props} points={POINTS.slice(5)} />);
    const img = screen.getByRole('img');
    expect(img.getAttribute('aria-label')).toContain('Optimum: 90.0% on DRAM');
    expect(screen.queryByTestId('weight-curve-line')).toBeNull();
    expect(screen.getByTestId('weight-optimum')).toBeTruthy();
  });

  it('a share range zooms in: only its points and marks, the band clipped to it, the range said in the description', () => {
    render(<WeightCurveChart {...props} shareRange={[0.75, 1]} testId="zoom" bandwidthRatio={{ ...props.bandwidthRatio, dramShare: 0.5 }} />);
    expect(screen.getByTestId('zoom').dataset.points).toBe('4');
    const d = screen.getByTestId('weight-curve-line').getAttribute('d')!;
    const xs = [...d.matchAll(/[ML]([\d.]+),/g)].map((m) => Number(m[1]));
    // 75 % is the left edge of the plot (the margin), 100 % its right edge.
    expect(xs[0]!).toBeGreaterThan(52);
    expect(xs[xs.length - 1]!).toBeCloseTo(340 - 14, 0);
    // The 4.2× point at 0 % is not there to squash the y axis: the top tick is near the 1.02 point.
    const ticks = [...screen.getByTestId('zoom').querySelectorAll('g.ns-axis text')].map((t) => t.textContent);
    expect(ticks).not.toContain('4.00');
    expect(screen.queryByTestId('weight-bandwidth-ratio')).toBeNull();
    expect(screen.getByTestId('weight-optimum')).toBeTruthy();
    expect(document.getElementById('zoom-desc')!.textContent).toContain('Shares from 75.0% to 100.0% on DRAM.');
  });
});
