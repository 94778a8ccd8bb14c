import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { MAX_MARK_RADIUS, MIN_MARK_RADIUS, TrafficGraph, trafficLayout } from '../src/TrafficGraph';
import type { TrafficInput } from '../src/TrafficGraph';

const input: TrafficInput = {
  nodeIds: [0, 1, 2, 3],
  mcLoadBytesPerS: [8e9, 1e9, 1e9, 0],
  mcUtilisation: [0.8, 0.1, 0.1, 0],
  mcShare: [0.8, 0.1, 0.1, 0],
  hotIndex: 0,
  links: [
    { from: 0, to: 1, capacityBytesPerS: 4e9 },
    { from: 1, to: 0, capacityBytesPerS: 4e9 },
  ],
  linkLoadBytesPerS: [3e9, 0.5e9],
  linkUtilisation: [0.75, 0.125],
};

describe('trafficLayout', () => {
  const layout = trafficLayout(input, 300);
  it('sizes NodeMarks by memory-controller load (area ∝ load)', () => {
    const [a, b, , d] = layout.marks;
    expect(a!.r).toBeCloseTo(MAX_MARK_RADIUS);
    expect(d!.r).toBeCloseTo(MIN_MARK_RADIUS);
    expect(a!.r).toBeGreaterThan(b!.r);
    const span = MAX_MARK_RADIUS - MIN_MARK_RADIUS;
    expect(b!.r).toBeCloseTo(MIN_MARK_RADIUS + span * Math.sqrt(1 / 8));
  });
  it('marks the hot spot it is given and colours by utilisation', () => {
    expect(layout.hotId).toBe(0);
    expect(layout.marks.filter((m) => m.hot).map((m) => m.id)).toEqual([0]);
    expect(layout.marks[0]!.fill).not.toBe(layout.marks[3]!.fill);
  });
  it('draws directed links with width by traffic, the two directions apart', () => {
    expect(layout.links).toHaveLength(2);
    expect(layout.links[0]!.width).toBeGreaterThan(layout.links[1]!.width);
    expect(layout.links[0]!.d).not.toBe(layout.links[1]!.d);
  });
  it('no hot spot when none is given (the rule is the engine\'s hotSpotIndex)', () => {
    expect(trafficLayout({ ...input, hotIndex: -1 }, 300).hotId).toBeNull();
    const { hotIndex: _, ...without } = input;
    expect(trafficLayout(without, 300).hotId).toBeNull();
  });
  it('renders share labels and marks', () => {
    const { container } = render(<TrafficGraph traffic={input} title="t" />);
    expect(container.querySelectorAll('[data-testid="node-mark"]')).toHaveLength(4);
    expect(container.querySelector('[data-node="0"] [data-testid="node-share"]')!.textContent).toBe('80%');
    expect(container.querySelector('[data-testid="traffic-graph"]')!.getAttribute('data-hot-node')).toBe('0');
  });
});
