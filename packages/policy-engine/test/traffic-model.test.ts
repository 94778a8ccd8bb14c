/**
 * The calibrated traffic model (docs/engine.md, "Traffic model", "Stall share", "Observed → idle
 * time"): machine facts with provenance, the observed → idle conversion, the stall-share sources,
 * and the guest hinting-fault recording's steady state.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeInput } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset, listPresets } from '../src/machine/presets.js';
import { LQ_CONTENTION_SHARE, LQ_QUEUE_SCALE, sustainedShare, trafficModel } from '../src/machine/traffic.js';
import { demandOf } from '../src/engine/simulate.js';
import { readTrace } from '../src/trace/reader.js';
import { mirrorTrace, type MirrorSpec } from '../fidelity/mirror.js';
import { oneNodeHotSpec } from './helpers/one-node-hot.js';

const spec = (over: Partial<MirrorSpec> = {}): MirrorSpec => oneNodeHotSpec('test', 'traffic-model test', over);

describe('machine facts of the traffic model', () => {
  it('sustained capacity: a preset STREAM figure (S0), else the measured sustained/theoretical share (S1)', () => {
    const x7560 = trafficModel(machineModel(getPreset('intel-xeon-x7560-4s')));
    expect(x7560.mcCapacity.value[0]).toBeCloseTo(10e9, -6);
    expect(x7560.mcCapacity.source).toMatch(/^estimated:S0/);
    const share = sustainedShare('DDR3');
    expect(share.value).toBeCloseTo((55 / 8 / 21.3 + 40 / 4 / 17.1) / 2, 3);
    expect(sustainedShare('DDR2')).toEqual(share);
    const opteron = trafficModel(machineModel(getPreset('amd-opteron-8385-4p')));
    expect(opteron.mcCapacity.value[0]).toBeCloseTo(12.8e9 * share.value, -3);
    expect(opteron.mcCapacity.source).toMatch(/^estimated:S1/);
    expect(opteron.mcCapacity.source).toMatch(/NUMA-STREAM/);
  });

  it('rule S1 for a current server: the share of published DDR4 two-socket STREAM figures, not the 2010-era one', () => {
    const current = sustainedShare('DDR5');
    expect(current.value).toBeCloseTo((250 / 307.2 + 199 / 256 + 128 / 153.6) / 3, 3);
    expect(current.value).toBeGreaterThan(0.75);
    expect(sustainedShare(undefined)).toEqual(current);
    const spr = trafficModel(machineModel(getPreset('intel-spr-2s')));
    expect(spr.mcCapacity.value[0]).toBeCloseTo(307.2e9 * current.value, -6);
    expect(spr.mcCapacity.source).toMatch(/^estimated:S1.*AnandTech/);
    // A machine that is not a preset (unknown DRAM generation) is treated as a current server.
    const custom = trafficModel(machineModel({ ...getPreset('intel-spr-2s'), name: 'my-box' }));
    expect(custom.mcCapacity.value[0]).toBeCloseTo(307.2e9 * current.value, -6);
  });

  it('every preset names the DRAM generation its memory-bandwidth provenance describes', () => {
    for (const p of listPresets()) {
      const said = new Set(JSON.stringify(p.machine.provenance?.memoryBandwidthGBps ?? '').match(/DDR\d/g) ?? []);
      expect(p.memoryGeneration, p.id).toBeDefined();
      expect([...said], p.id).toContain(p.memoryGeneration);
    }
  });

  it('rule XB0: where the STREAM figure is documented as the northbridge\'s, it is the crossbar capacity and the controllers take S1', () => {
    const share = sustainedShare('DDR3');
    const t = trafficModel(machineModel(getPreset('amd-opteron-6172-4p')));
    expect(t.crossbarCapacity).not.toBeNull();
    expect(t.crossbarCapacity!.value[3]).toBeCloseTo((55 / 8) * 1e9, -3);
    expect(t.crossbarCapacity!.source).toMatch(/^estimated:XB0.*Northbridge, only runs at 1\.8GHz/);
    expect(t.mcCapacity.value[3]).toBeCloseTo(21.3e9 * share.value, -3);
    expect(t.mcCapacity.source).toMatch(/^estimated:S1.*XB0/);
    // MLP1 from what the cores reach: the crossbar, not the controller
    expect(t.mlp.value).toBeCloseTo(Math.min(8, ((55 / 8) * 1e9 * 98e-9) / 64 / 6), 9);
    for (const id of ['intel-xeon-x7560-4s', 'amd-opteron-8385-4p', 'amd-asymsched-machine-a', 'dram-cxl-1s']) {
      expect(trafficModel(machineModel(getPreset(id))).crossbarCapacity, id).toBeNull();
    }
  });

  it('crossbar bytes: a local access crosses its node once, a remote one the home node and every node its data arrives at', () => {
    const machine = machineModel(getPreset('amd-opteron-6172-4p'));
    const n = machine.nodeCount;
    const local = new Float64Array(n * n);
    local[0] = 1000;
    const d0 = demandOf(machine, local, new Float64Array(n * n));
    expect(d0.xbBytes[0]).toBe(64_000);
    expect(d0.xbAccesses[0]).toBe(1000);
    expect([...d0.xbBytes].slice(1).every((v) => v === 0)).toBe(true);
    const remote = new Float64Array(n * n);
    remote[0 * n + 1] = 1000; // cpu node 0, memory node 1 (same package: one link)
    const d1 = demandOf(machine, remote, new Float64Array(n * n));
    expect(d1.xbBytes[1]).toBe(64_000 + 8_000); // the controller's line + the request arriving
    expect(d1.xbBytes[0]).toBe(68_000); // the response with its data arriving at node 0
    expect(d1.xbAccesses[0]).toBeCloseTo(1000, 9);
    expect(d1.xbAccesses[1]).toBeCloseTo(1000, 9);
  });

  it('service scales and MLP come from the idle latencies and the sustained capacity', () => {
    const t = trafficModel(machineModel(getPreset('amd-opteron-8385-4p')));
    // rule LQ0: the curve c·u + q·u/(1 − u) scales with the node's idle latency and its line time
    expect(t.mcContentionNs[0]).toBeCloseTo(LQ_CONTENTION_SHARE * 100, 9);
    expect(t.mcQueueNs[0]).toBeCloseTo((LQ_QUEUE_SCALE * 64 * 1e9) / t.mcCapacity.value[0]!, 9);
    expect(t.mcCurveSource).toMatch(/^estimated:LQ0 .*Intel MLC/);
    // one hop 110 − 100, two hops (130 − 100) / 2: mean over the 12 remote pairs (8 one-hop, 4 two-hop)
    expect(t.linkServiceNs.value).toBeCloseTo((8 * 10 + 4 * 15) / 12, 9);
    expect(t.mlp.value).toBeCloseTo((t.mcCapacity.value[0]! * 100e-9) / 64 / 4, 9);
    // the cores' outstanding-miss limit is a preset fact (MLP0), with a default rule otherwise
    expect(t.mlpLimit.value).toBe(8);
    expect(t.mlpLimit.source).toMatch(/^estimated:AMD Family 10h/);
    const x7560 = trafficModel(machineModel(getPreset('intel-xeon-x7560-4s')));
    expect(x7560.mlpLimit).toEqual({ value: 10, source: expect.stringMatching(/^documented:Intel 64 and IA-32/) });
    const genoa = trafficModel(machineModel(getPreset('amd-genoa-2s-nps4')));
    expect(genoa.mlpLimit.source).toMatch(/^estimated:MLP0/);
    expect(genoa.mlp.value).toBeLessThanOrEqual(genoa.mlpLimit.value);
    expect(t.coherence.value).toBe('broadcast');
    expect(trafficModel(machineModel(getPreset('intel-xeon-x7560-4s'))).coherence.value).toBe('filtered');
  });

  it('documented routes stay as they are; estimated ones share their equal-cost paths', () => {
    expect(trafficModel(machineModel(getPreset('amd-opteron-8385-4p'))).sharedRoutes).toBe(true);
    expect(trafficModel(machineModel(getPreset('intel-spr-2s'))).sharedRoutes).toBe(true);
    const a = machineModel(getPreset('amd-asymsched-machine-a'));
    // every pair has its own measured link: one path each
    const t = trafficModel(a);
    for (let p = 0; p < 64; p++) expect(t.latencyLinks.start[p + 1]! - t.latencyLinks.start[p]!).toBe(p % 9 === 0 ? 0 : 2);
  });
});

describe('observed → idle time', () => {
  it('the recorded placement is predicted at its recorded time (model latency, rate from the samples)', () => {
    const r = analyze(readTrace(mirrorTrace(spec())), { policies: ['observed', 'interleave'], windowMs: 100 });
    const observed = r.policies.find((p) => p.policy === 'observed')!;
    for (const [w, m] of observed.replay.windows.entries()) {
      const info = r.input.windows.info(w);
      expect(m.predictedUs / (info.endUs - info.startUs)).toBeCloseTo(1, 5);
    }
    // node 0 alone serves 16 threads: interleaving is predicted faster
    expect(r.policies.find((p) => p.policy === 'interleave')!.predictedSpeedup).toBeGreaterThan(1);
    expect(r.notes.join('\n')).toMatch(/closed loop calibrated on the recording.*stall share from the access samples' rate/s);
  });

  it('a congested recording spends part of each window waiting: its loop has compute below the window and a population of at least the typical concurrency', () => {
    const input = buildReplayInput(readTrace(mirrorTrace(spec({ accessesPerThreadPerS: 5e6 }))), { windowMs: 100 });
    const w = input.windows.get(1);
    const t = trafficModel(input.machine);
    expect(w.loop!.computeUs).toBeLessThan(0.8 * (w.endUs - w.startUs));
    expect(w.loop!.computeUs).toBeGreaterThan(0);
    expect(w.loop!.concurrency).toBeGreaterThanOrEqual(w.loop!.threads * t.mlp.value * (1 - 1e-9));
    expect(w.loop!.idleScale).toBe(1);
    expect(w.loop!.queueScale).toBe(1);
  });

  it('stall share from the counters and PMU latency when the trace has them: observed gives back the measured latency', () => {
    const withPmu = buildReplayInput(readTrace(mirrorTrace(spec({ loadLatencyCycles: 1197, counters: { ipc: 0.15, clockGHz: 2.3 } }))), { windowMs: 100 });
    const plain = buildReplayInput(readTrace(mirrorTrace(spec())), { windowMs: 100 });
    expect(withPmu.notes!.join('\n')).toMatch(/latency: the recording's PMU load latencies; stall share from the trace's L3-miss and cycle counters/);
    // a longer measured latency means more of the recorded time was stall: less compute
    expect(withPmu.windows.get(1).loop!.computeUs).toBeLessThan(plain.windows.get(1).loop!.computeUs);
    const r = analyzeInput(withPmu, { policies: ['observed'] });
    for (const m of r.policies[0]!.headlineWindows.slice(1)) expect(m.memoryLatencyNs).toBeCloseTo(1197 / 2.3, 3);
  });
});

describe('the guest recording (NUMA hinting faults, shared buffer bound to node 0)', () => {
  const trace = readTrace(new Uint8Array(readFileSync(resolve(__dirname, '../../../sample-traces/recorded-guest-hinting-4nodes.numascope'))));
  const r = analyze(trace);
  // The headline is the steady state (the default).
  expect(r.headline).toBe('steady-state');
  const steady = (id: string) => r.policies.find((p) => p.policy === id)!;

  it('assumes the access rate (50 % stall in the busiest window) and says so', () => {
    expect(r.notes.join('\n')).toMatch(/stall share assumed 50 %/);
    const w0 = r.input.windows.get(0);
    expect(w0.accessScale!).toBeGreaterThan(1);
  });

  it('interleave lowers MC imbalance far below 35 % and is not slower than first-touch (within 1 %) or observed', () => {
    // The guest is a machine of unknown DRAM generation (rule S1's current-server share): node 0's
    // controller is far from full, so spreading its pages trades little queueing for remote hops.
    const il = steady('interleave');
    expect(il.mcImbalancePct).toBeLessThan(5);
    expect(il.predictedUs).toBeLessThanOrEqual(steady('first-touch').predictedUs * 1.01);
    expect(il.predictedUs).toBeLessThanOrEqual(steady('observed').predictedUs * 1.01);
  });

  it('Carrefour is not slower than first-touch or observed and lowers MC imbalance below its 35 % threshold', () => {
    const cf = steady('carrefour');
    expect(cf.predictedUs).toBeLessThanOrEqual(steady('first-touch').predictedUs);
    expect(cf.predictedUs).toBeLessThanOrEqual(steady('observed').predictedUs);
    expect(cf.mcImbalancePct).toBeLessThan(35);
  });
});
