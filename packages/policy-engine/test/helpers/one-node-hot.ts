import type { MirrorSpec } from '../../fidelity/mirror.js';

/**
 * 16 threads on the Opteron 8385's 4 nodes reading (90 % loads) 1024 shared pages that all sit on
 * node 0: the one-controller hot spot the steady-state and traffic-model tests start from.
 */
export function oneNodeHotSpec(id: string, description: string, over: Partial<MirrorSpec> = {}): MirrorSpec {
  return {
    id,
    description,
    preset: 'amd-opteron-8385-4p',
    threadNodes: Array.from({ length: 16 }, (_, t) => t % 4),
    regions: [{ name: 'shared', pageNodes: Array(1024).fill(0) }],
    targets: [{ region: 0, share: 1, loadShare: 0.9 }],
    accessesPerThreadPerS: 4e6,
    durationUs: 500_000,
    samples: 8000,
    seed: 5,
    ...over,
  };
}
