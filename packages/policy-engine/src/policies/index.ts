/**
 * The policy registry. `getPolicy(id)` accepts the ids of listPolicies() plus `interleave:A,B,…`
 * (node indices). `manual` needs a placement: build it with manualPolicy(spec).
 */
import type { Policy } from '../engine/contract.js';
import { EngineError } from '../engine/errors.js';
import { asymschedPolicy } from './asymsched.js';
import { autonumaPolicy } from './autonuma.js';
import { carrefourPolicy } from './carrefour.js';
import { firstTouchPolicy } from './first-touch.js';
import { interleaveAllPolicy, interleavePolicy } from './interleave.js';
import { observedPolicy } from './observed.js';

export { observedPolicy } from './observed.js';
export { firstTouchPolicy, firstTouchPageNodes } from './first-touch.js';
export { interleavePolicy, interleaveAllPolicy, interleavePageNodes, pagesByAddress } from './interleave.js';
export { manualPolicy, type ManualPlacement } from './manual.js';

/** Every policy that needs no parameters, in the order reports show them. */
const POLICIES: readonly Policy[] = [observedPolicy, firstTouchPolicy, interleaveAllPolicy, autonumaPolicy, carrefourPolicy, asymschedPolicy];

export function listPolicies(): Policy[] {
  return [...POLICIES];
}

export const POLICY_IDS: readonly string[] = POLICIES.map((p) => p.id);

export function getPolicy(id: string): Policy {
  const found = POLICIES.find((p) => p.id === id);
  if (found) return found;
  const m = /^interleave:(\d+(?:,\d+)*)$/.exec(id);
  if (m) return interleavePolicy(m[1]!.split(',').map(Number));
  if (id === 'manual') {
    throw new EngineError('unknown-policy', 'policy "manual" needs a placement: pass one (CLI: --manual FILE.json; API: manualPolicy(spec))');
  }
  throw new EngineError('unknown-policy', `unknown policy "${id}"; valid policies: ${[...POLICY_IDS, 'interleave:N,M,…', 'manual'].join(', ')}`);
}
