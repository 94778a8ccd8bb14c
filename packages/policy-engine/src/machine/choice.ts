/**
 * Which machine model the engine replays a trace on, and why (docs/engine.md, "Which machine
 * model"). One rule for the CLI and the app:
 *
 * 1. `--target-machine SPEC` (the app: a `policy@preset` column): re-target the recording onto
 *    that model, whatever the trace holds. This is the what-if ("how would this behave on a
 *    2-socket Genoa?"); the recording's own calibration says nothing about another machine.
 * 2. The trace's embedded `numascope bench` calibration (measured on the machine it was recorded
 *    on, `record` embeds it), when it describes the recorded nodes.
 * 3. `--machine SPEC` describing the recorded machine (same node ids and cpus): a calibration
 *    file, an hwloc file or a preset of that machine.
 * 4. The recorded machine (sysfs, as the manifest holds it).
 *
 * A `--machine` whose nodes or cpus differ from the recording's cannot describe the recorded
 * machine: it re-targets, as `--target-machine` does, and the choice says so.
 */
import type { TraceMachine } from '../trace/types.js';
import { recordedMachine, withRecordedClock } from './loaders.js';

export type MachineChoiceKind = 'target-machine' | 'embedded-calibration' | 'machine-file' | 'recorded';

export interface MachineChoice {
  /** Which rule chose. */
  used: MachineChoiceKind;
  /** The model chosen. */
  machine: TraceMachine;
  /** Why, in one sentence (printed by the CLI, shown by the app). */
  reason: string;
  /** Whether the model's topology differs from the recording's (the engine re-targets). */
  retarget: boolean;
  /** Models offered but not used, and why (one line each). */
  notes: string[];
}

/** A model offered by the user, with the name it was given by (a preset id or file name). */
export interface OfferedMachine {
  machine: TraceMachine;
  name: string;
}

/** Same node ids in the same order and the same cpus per node. */
export function sameNodes(a: TraceMachine, b: TraceMachine): boolean {
  if (a.nodes.length !== b.nodes.length) return false;
  return a.nodes.every((n, i) => {
    const m = b.nodes[i]!;
    return n.id === m.id && n.cpus.length === m.cpus.length && n.cpus.every((c, k) => c === m.cpus[k]);
  });
}

const shape = (m: TraceMachine) => `${m.nodes.length} node${m.nodes.length === 1 ? '' : 's'}, ${m.nodes.reduce((s, n) => s + n.cpus.length, 0)} cpus`;

/**
 * The model to replay a trace on: `target` (explicit re-target), else the embedded calibration,
 * else `machine` when it describes the recorded machine (a re-target when it does not), else the
 * recorded machine.
 */
export function chooseMachine(manifest: { machine: TraceMachine; calibration?: TraceMachine }, offered: { machine?: OfferedMachine; target?: OfferedMachine } = {}): MachineChoice {
  const recorded = manifest.machine;
  const notes: string[] = [];
  const embedded = recordedMachine(manifest);
  const calibrated = embedded.machine !== recorded;
  if (!calibrated && embedded.note) notes.push(embedded.note);
  const calDate = embedded.machine.calibration?.date ?? 'date unknown';

  if (offered.target) {
    const t = offered.target;
    if (calibrated) notes.push(`the trace's embedded calibration (${calDate}) is not used: it describes the recording machine, and the replay is on ${t.name}`);
    if (offered.machine) notes.push(`--machine ${offered.machine.name} is not used: --target-machine ${t.name} comes first`);
    const retarget = !sameNodes(t.machine, recorded);
    return {
      used: 'target-machine',
      machine: t.machine,
      reason: `re-targeted onto ${t.name} (${shape(t.machine)}) as asked (--target-machine)${retarget ? `; the recording has ${shape(recorded)}` : ''}`,
      retarget,
      notes,
    };
  }

  const offeredMachine = offered.machine;
  if (offeredMachine && !sameNodes(offeredMachine.machine, recorded)) {
    if (calibrated) notes.push(`the trace's embedded calibration (${calDate}) is not used: it describes the recording machine, and the replay is on ${offeredMachine.name}`);
    return {
      used: 'target-machine',
      machine: offeredMachine.machine,
      reason: `re-targeted onto ${offeredMachine.name} (${shape(offeredMachine.machine)}): --machine describes another machine than the recording's (${shape(recorded)}), so it is taken as --target-machine`,
      retarget: true,
      notes,
    };
  }

  if (calibrated) {
    if (offeredMachine) {
      notes.push(`--machine ${offeredMachine.name} is not used: the trace embeds a calibration measured on the recording machine, which comes first; pass --target-machine ${offeredMachine.name} to replay on it anyway`);
    }
    return {
      used: 'embedded-calibration',
      machine: embedded.machine,
      reason: `the trace's embedded numascope bench calibration (${calDate}), measured on the machine it was recorded on`,
      retarget: false,
      notes,
    };
  }

  if (offeredMachine) {
    return {
      used: 'machine-file',
      machine: withRecordedClock(offeredMachine.machine, recorded),
      reason: `--machine ${offeredMachine.name}, which describes the recorded machine's nodes${manifest.calibration ? '' : ' (the trace embeds no calibration)'}`,
      retarget: false,
      notes,
    };
  }

  return {
    used: 'recorded',
    machine: recorded,
    reason: `the machine the trace was recorded on (${recorded.source})${manifest.calibration ? '' : '; the trace embeds no calibration (numascope bench on that machine before recording adds one)'}`,
    retarget: false,
    notes,
  };
}

/** The choice without the model, for JSON output. */
export function machineChoiceJson(c: MachineChoice): { used: MachineChoiceKind; name: string; source: string; reason: string; retarget: boolean; notes: string[] } {
  return { used: c.used, name: c.machine.name, source: c.machine.source, reason: c.reason, retarget: c.retarget, notes: c.notes };
}
