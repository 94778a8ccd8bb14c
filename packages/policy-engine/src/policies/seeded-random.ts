/**
 * A small seeded pseudo-random generator (mulberry32) for the policies that draw at random
 * (Carrefour's interleave coin, AutoNUMA's choice of the faulting thread). Same seed, same
 * sequence, on every platform: no Math.random anywhere in a replay.
 */
export interface SeededRandom {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

export function seededRandom(seed: number): SeededRandom {
  let state = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n) };
}
