/**
 * Re-targets a recording onto another machine model ("how would this behave on a 2-socket
 * Genoa?"). Accesses (windows) are kept as recorded; only the placement is mapped, by a rule:
 *
 * - `modulo`: source node index i → the (i mod k)-th target node that has cpus;
 * - `proportional`: i → the ⌊i·k / n⌋-th target node that has cpus (keeps neighbouring source
 *   nodes together, so a 2-node recording spreads over halves of an 8-node target);
 *
 * where n = source nodes and k = target nodes with cpus. Threads and pages use the same map, so a
 * page local to its thread stays local. Memory-only target nodes (CXL) receive pages only from a
 * policy that places them there (interleave over all nodes, manual). Access counts, sampling
 * weights and window lengths are unchanged: the target runs the same work.
 */
import type { MachineModel, ReplayInput } from '../model/contract.js';
import { EngineError } from '../model/errors.js';

export type RetargetRule = 'modulo' | 'proportional';
export const RETARGET_RULES: readonly RetargetRule[] = ['modulo', 'proportional'];

/** Target node index of each source node index under `rule`. */
export function retargetNodeMap(sourceNodes: number, target: MachineModel, rule: RetargetRule): Int16Array {
  const cpuNodes = target.nodeCpus.map((cpus, i) => (cpus.length > 0 ? i : -1)).filter((i) => i >= 0);
  if (cpuNodes.length === 0) throw new EngineError('bad-option', `target machine "${target.name}" has no node with cpus`);
  const k = cpuNodes.length;
  const map = new Int16Array(sourceNodes);
  for (let i = 0; i < sourceNodes; i++) {
    if (rule === 'modulo') map[i] = cpuNodes[i % k]!;
    else if (rule === 'proportional') map[i] = cpuNodes[Math.min(k - 1, Math.floor((i * k) / sourceNodes))]!;
    else throw new EngineError('bad-option', `unknown re-target rule "${rule as string}"; valid rules: ${RETARGET_RULES.join(', ')}`);
  }
  return map;
}

export function retarget(input: ReplayInput, targetMachine: MachineModel, rule: RetargetRule = 'modulo'): ReplayInput {
  const map = retargetNodeMap(input.machine.nodeCount, targetMachine, rule);
  const remap = (nodes: Int16Array) => {
    const out = new Int16Array(nodes.length);
    for (let i = 0; i < nodes.length; i++) out[i] = nodes[i]! >= 0 ? map[nodes[i]!]! : -1;
    return out;
  };
  const mapping = Array.from(map, (to, from) => `${input.machine.nodeIds[from]}→${targetMachine.nodeIds[to]}`).join(', ');
  return {
    ...input,
    machine: targetMachine,
    initial: {
      threadNode: remap(input.initial.threadNode),
      pageNode: remap(input.initial.pageNode),
      replicated: input.initial.replicated.slice(),
    },
    observedThreadNode: input.observedThreadNode?.map(remap),
    // What actually ran, on the machine it ran on: predicted times stay anchored on it (analyze.ts).
    recorded: input.recorded ?? { machine: input.machine, initial: input.initial, observedThreadNode: input.observedThreadNode },
    notes: [
      ...(input.notes ?? []),
      `re-targeted from "${input.machine.name}" (${input.machine.nodeCount} nodes) onto "${targetMachine.name}" (${targetMachine.nodeCount} nodes) by rule ${rule}: node ${mapping}`,
    ],
  };
}
