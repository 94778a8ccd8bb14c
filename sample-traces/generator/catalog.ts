/** The sample traces committed in sample-traces/, and exactly how each is generated. */
import type { GenerateOptions } from './generate.js';

/** Access samples per committed trace: small enough to commit (under 2 MB), enough for every policy. */
export const DEFAULT_SAMPLES = 50_000;

export interface CommittedSample extends Required<GenerateOptions> {
  file: string;
}

export const COMMITTED_SAMPLES: readonly CommittedSample[] = [
  { file: 'streamcluster-hotspot.numascope', model: 'streamcluster-hotspot', seed: 1, samples: DEFAULT_SAMPLES, machine: 'amd-opteron-8385-4p' },
  { file: 'partitioned.numascope', model: 'partitioned', seed: 1, samples: DEFAULT_SAMPLES, machine: 'amd-opteron-8385-4p' },
  { file: 'shared-readmostly.numascope', model: 'shared-readmostly', seed: 1, samples: DEFAULT_SAMPLES, machine: 'amd-genoa-2s-nps4' },
  { file: 'two-groups.numascope', model: 'two-groups', seed: 1, samples: DEFAULT_SAMPLES, machine: 'amd-asymsched-machine-a' },
];
