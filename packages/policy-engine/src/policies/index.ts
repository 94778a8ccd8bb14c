/**
 * The policy registry: the descriptors (descriptors.ts) joined with the code. `getPolicy(id)`
 * accepts the default set's ids, `interleave:A,B,…` (node indices), `weighted-interleave…`,
 * `tiering`, `replicate` / `replicate:read=S,object=TEXT,address=0xA-0xB` and, with a placement,
 * `manual`.
 */
import type { Policy } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { asymschedPolicy } from './asymsched.js';
import { autonumaPolicy } from './autonuma.js';
import { carrefourPolicy } from './carrefour.js';
import { POLICY_IDS, needsPlacement, policyForms, type DefaultPolicyId } from './descriptors.js';
import { firstTouchPolicy } from './first-touch.js';
import { interleaveAllPolicy, interleavePolicy } from './interleave.js';
import { manualPolicy, type ManualPlacement } from './manual.js';
import { observedPolicy } from './observed.js';
import { tieringPolicy } from './tiering.js';
import { parseReplicateId, replicateDefaultPolicy, replicatePolicy } from './replicate.js';
import { parseWeightedId, parseWeightedNodeSetId, weightedInterleavePolicy, weightedInterleaveRecommendedPolicy, weightSides } from './weighted-interleave.js';
import type { MachineModel } from '../model/contract.js';

export { observedPolicy } from './observed.js';
export { firstTouchPolicy, firstTouchPageNodes } from './first-touch.js';
export { interleavePolicy, interleaveAllPolicy, interleavePageNodes, pagesByAddress } from './interleave.js';
export { manualPolicy, type ManualPlacement } from './manual.js';
export * from './descriptors.js';
export { tieringPolicy, tieringPlacement } from './tiering.js';
export {
  replicatePolicy,
  replicationOf,
  parseReplicateId,
  replicateId,
  REPLICATE_DEFAULT_READ_SHARE,
  REPLICATE_MAX_REFUSAL_DECISIONS,
  type ReplicateOptions,
  type ReplicationResult,
} from './replicate.js';
export {
  weightedInterleavePolicy,
  recommendWeights,
  weightedPageNodes,
  weightedRanges,
  weightedNodeOf,
  weightedSlots,
  weightsForShares,
  weightSides,
  checkWeights,
  parseWeightedId,
  parseWeightedNodeSetId,
  checkNodeSet,
  MIN_WEIGHT,
  MAX_WEIGHT,
} from './weighted-interleave.js';

/** The code of every policy in the default set (the type makes the table complete). */
const DEFAULT_SET: Readonly<Record<DefaultPolicyId, Policy>> = {
  observed: observedPolicy,
  'first-touch': firstTouchPolicy,
  interleave: interleaveAllPolicy,
  autonuma: autonumaPolicy,
  carrefour: carrefourPolicy,
  asymsched: asymschedPolicy,
};

/** Every policy that needs no parameters, in the order reports show them. */
export function listPolicies(): Policy[] {
  return POLICY_IDS.map((id) => DEFAULT_SET[id]);
}

/**
 * Whether a machine mixes memory of unequal kinds: memory-only (cpu-less) nodes, or more than
 * one memory tier. Such a machine also gets the tiered policies by default (TIERED_POLICY_IDS).
 */
export function tieredMachine(machine: MachineModel): boolean {
  return weightSides(machine).slow.length > 0;
}

/** The policies replayed by default on `machine`: the default set, plus the tiered ones on a tiered machine. */
export function listPoliciesFor(machine: MachineModel): Policy[] {
  return tieredMachine(machine) ? [...listPolicies(), weightedInterleaveRecommendedPolicy, tieringPolicy] : listPolicies();
}

export interface PolicyArguments {
  /** The placement of a policy that takes one (manual). */
  placement?: ManualPlacement;
}

export function getPolicy(id: string, args: PolicyArguments = {}): Policy {
  if (Object.hasOwn(DEFAULT_SET, id)) return DEFAULT_SET[id as DefaultPolicyId];
  const m = /^interleave:(\d+(?:,\d+)*)$/.exec(id);
  if (m) return interleavePolicy(m[1]!.split(',').map(Number));
  if (id === 'weighted-interleave') return weightedInterleaveRecommendedPolicy;
  if (id === 'tiering') return tieringPolicy;
  if (id === 'replicate') return replicateDefaultPolicy;
  const replicate = parseReplicateId(id);
  if (replicate) return replicatePolicy(replicate);
  const weighted = parseWeightedId(id);
  if (weighted) return weightedInterleavePolicy(weighted);
  const among = parseWeightedNodeSetId(id);
  if (among) return weightedInterleavePolicy(undefined, among);
  if (id.startsWith('weighted-interleave:')) {
    throw new EngineError(
      'unknown-policy',
      `"${id}" is not of the form weighted-interleave:N=W,M=W,… (node indices and integer weights 1–255) or weighted-interleave:N,M,… (node indices to recommend weights over)`,
    );
  }
  if (needsPlacement(id)) {
    if (args.placement) return manualPolicy(args.placement);
    throw new EngineError('unknown-policy', `policy "${id}" needs a placement: pass one (CLI: --manual FILE.json; API: getPolicy("${id}", { placement }) or manualPolicy(spec))`);
  }
  throw new EngineError('unknown-policy', `unknown policy "${id}"; valid policies: ${policyForms().join(', ')}`);
}
