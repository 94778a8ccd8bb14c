/**
 * The cpu clock that turns PMU load latencies (`samples.latency_cycles`, cycles) into time
 * (machine/traffic.ts, "Clock"; docs/engine.md, the "clock" row): the trace's recorded
 * `machine.cpuClockGHz` first, else a preset's `cpu clock` figure, else a clock in the cpu model
 * string, else null with the reason. On a non-preset machine (sysfs, JSON, a calibration) the
 * recording's clock is what makes the latencies count.
 */
import { describe, expect, it } from 'vitest';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { chooseMachine } from '../src/machine/choice.js';
import { machineFromJson, machineFromSysfs, recordedMachine } from '../src/machine/loaders.js';
import { machineModel, traceMachineOf } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';
import { trafficModel } from '../src/machine/traffic.js';
import { TraceError } from '../src/trace/errors.js';
import { readTrace } from '../src/trace/reader.js';
import type { TraceMachine } from '../src/trace/types.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const BASE_FREQ = 'documented:sysfs cpu0/cpufreq/base_frequency (the nominal frequency the cpufreq driver reports), 2000000 kHz';

/** A two-node machine from a copy of /sys (not a preset: no clock figure, no cpu model string). */
function sysfsMachine(): TraceMachine {
  const files: Record<string, string> = {};
  ['0-1', '2-3'].forEach((cpus, i) => {
    const d = `devices/system/node/node${i}/`;
    files[d + 'cpulist'] = `${cpus}\n`;
    files[d + 'distance'] = i === 0 ? '10 21\n' : '21 10\n';
    files[d + 'meminfo'] = `Node ${i} MemTotal:       1048576 kB\n`;
  });
  return machineFromSysfs(files, 'host');
}

function withClock(m: TraceMachine, ghz: number | null | undefined, source = BASE_FREQ): TraceMachine {
  const out: TraceMachine = { ...m, provenance: { ...m.provenance } };
  if (ghz === undefined) {
    delete out.cpuClockGHz;
    delete out.provenance['cpuClockGHz'];
  } else {
    out.cpuClockGHz = ghz;
    out.provenance['cpuClockGHz'] = source;
  }
  return out;
}

const PAGES = 64;
const ROWS = 4000;
const LATENCY_CYCLES = 600;

/** IBS-style load samples on local DRAM, each with a PMU latency of 600 cycles, on `machine`. */
function traceBytes(machine: TraceMachine): Uint8Array {
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.from([100, 101]),
    pid: new Int32Array(2).fill(100),
    name: ['main', 'w1'],
    first_seen_us: new Uint32Array(2),
    last_seen_us: new Uint32Array(2).fill(ROWS * 10),
    migrations: new BigInt64Array(2),
  };
  c.thread_placements = { time_us: new Uint32Array(2), thread: Uint32Array.from([0, 1]), cpu: Int16Array.from([0, 2]), node: Int8Array.from([0, 1]) };
  c.pages = {
    address: BigUint64Array.from({ length: PAGES }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(PAGES).fill(-1),
    node: Int8Array.from({ length: PAGES }, (_, p) => p % 2),
    page_size: new Uint32Array(PAGES).fill(4096),
    first_touch_us: new BigInt64Array(PAGES),
    first_touch_thread: Int32Array.from({ length: PAGES }, (_, p) => p % 2),
    first_touch_cpu: Int16Array.from({ length: PAGES }, (_, p) => (p % 2) * 2),
  };
  // Thread t on cpu 2t (node t) loads the pages of its own node: every access is local DRAM.
  const thread = Uint32Array.from({ length: ROWS }, (_, i) => i % 2);
  c.samples = {
    time_us: Uint32Array.from({ length: ROWS }, (_, i) => i * 10),
    thread,
    cpu: Int16Array.from(thread, (t) => 2 * t),
    page: Int32Array.from({ length: ROWS }, (_, i) => ((i >> 1) % (PAGES / 2)) * 2 + (i % 2)),
    offset: new Uint16Array(ROWS),
    op: { values: ['load'], indices: new Int8Array(ROWS) },
    event: { values: ['ibs-op'], indices: new Int8Array(ROWS) },
    data_source: { values: ['local-dram'], indices: new Int8Array(ROWS) },
    hops: new Int8Array(ROWS),
    node: Int8Array.from(thread),
    latency_cycles: new Uint32Array(ROWS).fill(LATENCY_CYCLES),
    stack: new Int32Array(ROWS).fill(-1),
    hitm: new Int8Array(ROWS).fill(-1),
    weight: new Uint32Array(ROWS).fill(1),
  };
  const manifest = minimalManifest();
  manifest.origin.kind = 'recorded';
  manifest.machine = machine;
  manifest.capture.durationUs = ROWS * 10;
  manifest.process = { pid: 100, startTimeTicks: '1', command: ['load'], attached: true, exitCode: null };
  return writeTrace(manifest, c);
}

describe('the recording clock', () => {
  it('a trace on a sysfs machine with cpuClockGHz 2.0: the clock is 2 GHz with its provenance, and the latencies are the PMU loads\'', () => {
    const trace = readTrace(traceBytes(withClock(sysfsMachine(), 2.0)));
    expect(trace.manifest.machine.cpuClockGHz).toBe(2);
    expect(trace.manifest.machine.provenance['cpuClockGHz']).toBe(BASE_FREQ);
    const model = machineModel(recordedMachine(trace.manifest).machine);
    expect(model.clockGHz).toEqual({ value: 2, source: BASE_FREQ });
    const clock = trafficModel(model).clockGHz;
    expect(clock.value).toBe(2);
    expect(clock.source).toBe(BASE_FREQ);
    const input = buildReplayInput(trace, { windowMs: 10 });
    expect(input.notes!.join('\n')).toMatch(/latency: the recording's PMU load latencies/);
    // The same trace without a clock: the model's latency at the recorded rates instead.
    const without = buildReplayInput(readTrace(traceBytes(withClock(sysfsMachine(), undefined))), { windowMs: 10 });
    expect(without.notes!.join('\n')).toMatch(/latency: the model's latency at the recorded rates/);
    expect(trafficModel(without.machine).clockGHz.value).toBeNull();
  });

  it('null with its reason: the engine says why, in the unavailable message', () => {
    const why = 'unavailable:no cpufreq, no clock in the model name and no cpu MHz in /proc/cpuinfo';
    const trace = readTrace(traceBytes(withClock(sysfsMachine(), null, why)));
    expect(trace.manifest.machine.cpuClockGHz).toBeNull();
    const clock = trafficModel(machineModel(trace.manifest.machine)).clockGHz;
    expect(clock.value).toBeNull();
    expect(clock.source).toMatch(/^unavailable:the machine records no cpu clock \(no cpufreq, no clock in the model name/);
  });

  it('a cpu model string "… @ 2.10GHz" without cpuClockGHz gives 2.1; "x.xx GHz" too', () => {
    const xeon = { ...sysfsMachine(), cpuModel: 'Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz' };
    const clock = trafficModel(machineModel(xeon)).clockGHz;
    expect(clock.value).toBeCloseTo(2.1, 12);
    expect(clock.source).toMatch(/^documented:the cpu model string "Intel\(R\) Xeon\(R\) Gold 6130 CPU @ 2\.10GHz" names 2\.1 GHz/);
    expect(trafficModel(machineModel({ ...sysfsMachine(), cpuModel: 'AMD Opteron 6172 (12 cores, 2.1 GHz)' })).clockGHz.value).toBeCloseTo(2.1, 12);
    // A recorded clock comes before the string.
    expect(trafficModel(machineModel(withClock(xeon, 3.7))).clockGHz.value).toBe(3.7);
  });

  it('no clock anywhere: null, and the message says what was looked at', () => {
    const none = trafficModel(machineModel(sysfsMachine())).clockGHz;
    expect(none.value).toBeNull();
    expect(none.source).toBe('unavailable:the machine description records no cpu clock, it is not a preset, and it has no cpu model string');
    const amd = trafficModel(machineModel({ ...sysfsMachine(), cpuModel: 'AMD EPYC 9254 24-Core Processor' })).clockGHz;
    expect(amd.value).toBeNull();
    expect(amd.source).toMatch(/its cpu model string "AMD EPYC 9254 24-Core Processor" names none$/);
  });

  it('presets: their cpu clock figure, unless the trace recorded the clock', () => {
    const preset = getPreset('amd-opteron-8385-4p');
    expect(trafficModel(machineModel(preset)).clockGHz.value).toBe(2.3);
    expect(trafficModel(machineModel(withClock(preset, 2.5))).clockGHz).toEqual({ value: 2.5, source: BASE_FREQ });
  });

  it('a clock outside 0.1–10 GHz is refused, naming the field', () => {
    const bad = minimalManifest();
    bad.machine.cpuClockGHz = 2100; // MHz given as GHz
    expect(() => writeTrace(bad, emptyColumns())).toThrow(/machine\.cpuClockGHz is invalid: a cpu clock in GHz, at most 10/);
    const worse = minimalManifest();
    (worse.machine as unknown as Record<string, unknown>)['cpuClockGHz'] = '2.1';
    expect(() => writeTrace(worse, emptyColumns())).toThrow(/machine\.cpuClockGHz is invalid/);
    expect(() => machineFromJson(JSON.stringify({ ...sysfsMachine(), cpuClockGHz: 0.01 }), 'm.json')).toThrow(/m\.json: cpuClockGHz must be a cpu clock in GHz between 0\.1 and 10/);
    // Absent: a file without the key reads as before.
    const old = readTrace(writeTrace(minimalManifest(), emptyColumns()));
    expect('cpuClockGHz' in old.manifest.machine).toBe(false);
    expect(() => readTrace(traceBytes(withClock(sysfsMachine(), 2.0)))).not.toThrow(TraceError);
  });

  it('kept by JSON machines, traceMachineOf, an embedded calibration and a --machine of the same nodes', () => {
    const m = withClock(sysfsMachine(), 2.0);
    expect(machineFromJson(JSON.stringify(m), 'm.json').cpuClockGHz).toBe(2);
    const back = traceMachineOf(machineModel(m));
    expect(back.cpuClockGHz).toBe(2);
    expect(back.provenance['cpuClockGHz']).toBe(BASE_FREQ);
    // A calibration of the recording machine records no clock: the recording's converts its latencies.
    const calibration = { ...sysfsMachine(), source: 'json:bench.json', calibration: { tool: 'numascope-bench', version: '0', date: '2026-01-01', fingerprint: 'x', partial: false, nodeIds: [0, 1], sustainedGBps: [10, 10] } };
    const used = recordedMachine({ machine: m, calibration }).machine;
    expect(used.calibration?.tool).toBe('numascope-bench');
    expect(used.cpuClockGHz).toBe(2);
    expect(trafficModel(machineModel(used)).clockGHz.source).toBe(`${BASE_FREQ} (the recording machine's, from the trace)`);
    const file = { ...sysfsMachine(), name: 'hand.json', source: 'json:hand.json' };
    const choice = chooseMachine({ machine: m }, { machine: { machine: file, name: 'hand.json' } });
    expect(choice.used).toBe('machine-file');
    expect(trafficModel(machineModel(choice.machine)).clockGHz.value).toBe(2);
  });
});
