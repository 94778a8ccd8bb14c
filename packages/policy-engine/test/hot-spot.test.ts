import { describe, expect, it } from 'vitest';
import { hotSpotIndex } from '../src/analyze/json.js';

describe('hotSpotIndex: one node clearly busiest, or none', () => {
  it('names a node that carries well over an even share and leads the next one', () => {
    expect(hotSpotIndex([0.8, 0.1, 0.1, 0])).toBe(0);
    expect(hotSpotIndex([0.1, 0.1, 0.7, 0.1])).toBe(2);
  });
  it('names none on an even load, on a two-way or four-way tie, or on one node', () => {
    expect(hotSpotIndex([0.25, 0.25, 0.25, 0.25])).toBe(-1);
    expect(hotSpotIndex([0.45, 0.45, 0.05, 0.05])).toBe(-1);
    // Eight nodes, two of them at 40 % each: both above 1.5 × an even share, neither leads.
    expect(hotSpotIndex([0.4, 0.4, 0.05, 0.05, 0.05, 0.05, 0, 0])).toBe(-1);
    expect(hotSpotIndex([1])).toBe(-1);
    expect(hotSpotIndex([])).toBe(-1);
  });
  it('needs more than 1.5 × an even share (not just the largest)', () => {
    expect(hotSpotIndex([0.36, 0.22, 0.21, 0.21])).toBe(-1);
    expect(hotSpotIndex([0.4, 0.2, 0.2, 0.2])).toBe(0);
  });
});
