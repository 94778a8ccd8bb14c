/**
 * Which machine model the engine replays a trace on (src/machine/choice.ts, docs/engine.md
 * "Which machine model"): an explicit --target-machine, then the trace's embedded calibration,
 * then --machine describing the recorded machine, then the recorded machine; a --machine with
 * other nodes re-targets. Through the CLI too, on a real recorded trace given an embedded
 * calibration (a real `numascope bench` run on the same one-node VM: fixtures/bench-quick-1node.json).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { chooseMachine } from '../src/machine/choice.js';
import { machineFromJson } from '../src/machine/loaders.js';
import { getPreset } from '../src/machine/presets.js';
import type { TraceMachine } from '../src/trace/types.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const TRACE = resolve(HERE, '../../../sample-traces/recorded-testload-4threads.numascope');
const benchText = readFileSync(resolve(HERE, 'fixtures/bench-quick-1node.json'), 'utf8');
const files = unzipSync(new Uint8Array(readFileSync(TRACE)));
const manifest = JSON.parse(strFromU8(files['manifest.json']!)) as { machine: TraceMachine; calibration?: TraceMachine };
const recorded = manifest.machine;
/** The bench run's model, on the recorded machine's node list (same VM, one node, cpus 0-1). */
const calibration = { ...machineFromJson(benchText, 'bench.json'), nodes: machineFromJson(benchText).nodes.map((n, i) => ({ ...n, cpus: recorded.nodes[i]!.cpus })) };
const genoa = { machine: getPreset('amd-genoa-2s-nps1'), name: 'amd-genoa-2s-nps1' };
const sameAsRecorded = { machine: { ...recorded, name: 'hand.json', source: 'json:hand.json', latenciesNs: [[77]] }, name: 'hand.json' };

describe('chooseMachine', () => {
  it('uses the recorded machine when nothing else is there, and says that no calibration is embedded', () => {
    const c = chooseMachine({ machine: recorded });
    expect(c.used).toBe('recorded');
    expect(c.machine).toBe(recorded);
    expect(c.reason).toMatch(/embeds no calibration/);
  });

  it('prefers the embedded calibration to --machine of the same machine, and says how to override', () => {
    const c = chooseMachine({ machine: recorded, calibration }, { machine: sameAsRecorded });
    expect(c.used).toBe('embedded-calibration');
    expect(c.machine.calibration?.tool).toBe('numascope-bench');
    expect(c.retarget).toBe(false);
    expect(c.notes.join('\n')).toMatch(/--machine hand\.json is not used.*--target-machine hand\.json/);
  });

  it('uses --machine of the recorded machine when no calibration is embedded', () => {
    const c = chooseMachine({ machine: recorded }, { machine: sameAsRecorded });
    expect(c.used).toBe('machine-file');
    expect(c.machine.latenciesNs).toEqual([[77]]);
  });

  it('--target-machine re-targets whatever the trace embeds', () => {
    const c = chooseMachine({ machine: recorded, calibration }, { target: genoa, machine: sameAsRecorded });
    expect(c.used).toBe('target-machine');
    expect(c.machine.name).toBe(genoa.machine.name);
    expect(c.retarget).toBe(true);
    expect(c.notes.join('\n')).toMatch(/embedded calibration .* is not used/);
    expect(c.notes.join('\n')).toMatch(/--machine hand\.json is not used: --target-machine/);
    // Onto the same machine's model: a replay on it, not a re-mapping of nodes.
    const same = chooseMachine({ machine: recorded, calibration }, { target: sameAsRecorded });
    expect([same.used, same.retarget]).toEqual(['target-machine', false]);
  });

  it('a --machine with other nodes is a re-target, said as such', () => {
    const c = chooseMachine({ machine: recorded, calibration }, { machine: genoa });
    expect(c.used).toBe('target-machine');
    expect(c.retarget).toBe(true);
    expect(c.reason).toMatch(/describes another machine .* taken as --target-machine/);
  });

  it('an embedded calibration of other nodes is skipped with the reason', () => {
    const other = { ...calibration, nodes: [{ ...calibration.nodes[0]!, id: 3 }] };
    const c = chooseMachine({ machine: recorded, calibration: other });
    expect(c.used).toBe('recorded');
    expect(c.notes.join('\n')).toMatch(/embedded calibration not used: its nodes \(3\) differ/);
  });
});

async function cli(...argv: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await main(argv, (s) => (out += s + '\n'), (s) => (err += s + '\n'));
  return { status, out, err };
}

describe('numascope-analyze prints which machine model it used and why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'numascope-choice-'));
  const calibrated = join(dir, 'calibrated.numascope');
  writeFileSync(calibrated, zipSync({ ...files, 'manifest.json': strToU8(JSON.stringify({ ...manifest, calibration })) }));
  const handFile = join(dir, 'hand.json');
  writeFileSync(handFile, JSON.stringify(sameAsRecorded.machine));
  const run = (...a: string[]) => cli('analyze', ...a, '--policy', 'first-touch', '--json').then((r) => ({ ...r, json: r.status === 0 ? JSON.parse(r.out) : null }));

  it('embedded calibration over --machine; --target-machine over both', async () => {
    const a = await run(calibrated, '--machine', handFile);
    expect(a.err).toBe('');
    expect(a.json.machine.choice).toMatchObject({ used: 'embedded-calibration', retarget: false });
    expect(a.json.machine.choice.notes[0]).toMatch(/--machine hand\.json is not used/);
    expect(a.json.machine.source).toMatch(/^numascope-bench:/);
    const b = await run(calibrated, '--target-machine', 'amd-genoa-2s-nps1');
    expect(b.json.machine.choice).toMatchObject({ used: 'target-machine', retarget: true, name: genoa.machine.name });
    expect(b.json.machine.nodeCount).toBe(2);
    const c = await run(TRACE, '--machine', handFile);
    expect(c.json.machine.choice).toMatchObject({ used: 'machine-file', source: 'json:hand.json' });
    const d = await run(TRACE);
    expect(d.json.machine.choice.used).toBe('recorded');
  });

  it('the text report names the model and the reason', async () => {
    const { status, out } = await cli('analyze', calibrated, '--machine', handFile, '--policy', 'first-touch');
    expect(status).toBe(0);
    expect(out).toMatch(/machine model: embedded-calibration \(the trace's embedded numascope bench calibration/);
    expect(out).toMatch(/note: --machine hand\.json is not used/);
  });

  it('plan and diagnose refuse --target-machine', async () => {
    const r = await cli('diagnose', TRACE, '--target-machine', 'amd-genoa-2s-nps1');
    expect(r.status).toBe(2);
    expect(r.err).toMatch(/drop --machine \/ --target-machine/);
  });
});
