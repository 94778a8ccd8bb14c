/**
 * Seeded pseudo-random numbers for the generator: xoshiro128** (Blackman & Vigna), its 128-bit
 * state filled from the seed with splitmix32. Same seed, same sequence, on every platform: only
 * 32-bit integer arithmetic (Math.imul, >>> 0). Never Math.random.
 */

export interface Rng {
  /** Uniform in [0, 1), 32 bits of resolution. */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Standard normal (mean 0, standard deviation 1), Box–Muller. */
  normal(): number;
}

/** splitmix32 step: a well-mixed 32-bit value from a counter. */
function splitmix32(state: { x: number }): number {
  state.x = (state.x + 0x9e3779b9) | 0;
  let z = state.x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** FNV-1a hash of a label, to derive independent streams from one seed. */
function hashLabel(label: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A generator for `seed` (an integer 0 … 2^32−1). `stream` names an independent sequence from
 * the same seed, so one part of the generator drawing more numbers does not shift another's.
 */
export function createRng(seed: number, stream = ''): Rng {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new Error(`seed must be an integer from 0 to 4294967295, got ${seed}`);
  }
  const init = { x: (seed ^ hashLabel(stream)) | 0 };
  let s0 = splitmix32(init);
  let s1 = splitmix32(init);
  let s2 = splitmix32(init);
  let s3 = splitmix32(init);
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1; // the all-zero state is a fixed point

  const nextUint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };

  let spareNormal: number | null = null;
  return {
    next: () => nextUint32() / 0x1_0000_0000,
    int: (n) => Math.floor((nextUint32() / 0x1_0000_0000) * n),
    normal: () => {
      if (spareNormal !== null) {
        const z = spareNormal;
        spareNormal = null;
        return z;
      }
      const u = 1 - nextUint32() / 0x1_0000_0000; // (0, 1]
      const v = nextUint32() / 0x1_0000_0000;
      const radius = Math.sqrt(-2 * Math.log(u));
      spareNormal = radius * Math.sin(2 * Math.PI * v);
      return radius * Math.cos(2 * Math.PI * v);
    },
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
