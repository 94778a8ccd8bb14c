// The main-process handlers with the real napi addon and a real child process (numascope-testload).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApplyReport, DesktopRecording as Recording, LiveEnd, LiveWindow, ProcessInfo } from '@numascope/protocol';
import { CHANNELS } from '../src/channels';
import { realLogic, repoRoot, testload } from './helpers';

if (!fs.existsSync(testload)) throw new Error(`${testload} is missing: build the collector (cargo build in native/collector, or npm test)`);

const { logic, live, dir } = realLogic();
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('main logic over the real napi addon', () => {
  it('probe and topology', async () => {
    const probe = (await logic.dispatch(CHANNELS.probe, [])) as { nodes: number; capabilities: unknown[] };
    expect(probe.nodes).toBeGreaterThanOrEqual(1);
    expect(probe.capabilities.length).toBeGreaterThan(0);
    const topo = (await logic.dispatch(CHANNELS.topology, [])) as { nodes: { id: number; cpus: number[] }[] };
    expect(topo.nodes.length).toBe(probe.nodes);
    expect(topo.nodes[0]!.cpus.length).toBeGreaterThan(0);
  });

  it('lists processes from /proc, including this one', async () => {
    const list = (await logic.dispatch(CHANNELS.listProcesses, [])) as ProcessInfo[];
    const me = list.find((p) => p.pid === process.pid);
    expect(me).toBeDefined();
    expect(me!.own).toBe(true);
    expect(me!.threads).toBeGreaterThan(0);
    expect(me!.rssBytes).toBeGreaterThan(0);
  });

  it('records a real child: live windows stream, then the end, then a valid trace', async () => {
    const rec = (await logic.dispatch(CHANNELS.startRecording, [
      { command: [testload, '--threads', '2', '--mib', '8', '--seconds', '1'] },
    ])) as Recording;
    expect(rec.status).toBe('running');
    const done = await logic.recordings.settled(rec.id);
    expect(done.status).toBe('finished');
    // Page faults are sampled adaptively by default (every fault below 10 000/s per thread), so a
    // burst of first touches gives fewer samples than pages touched.
    expect(done.summary!.samples).toBeGreaterThan(0);
    const msgs = live.get(rec.id)!;
    const windows = msgs.filter((m): m is LiveWindow => m.type === 'window');
    const end = msgs.at(-1) as LiveEnd;
    expect(end.type).toBe('end');
    expect(end.status).toBe('finished');
    expect(windows.length).toBeGreaterThanOrEqual(3);
    expect(windows.at(-1)!.final).toBe(true);
    // The collector's own windows (as numascope serve streams them): they follow the child's
    // threads faulting in their 8 MiB buffers, and the final one agrees with the trace.
    expect(windows.every((w) => w.pid === done.summary!.pid && w.recording === rec.id)).toBe(true);
    expect(windows.filter((w) => w.final)).toHaveLength(1);
    const last = windows.at(-1)!;
    expect(last.threadsSeen).toBeGreaterThanOrEqual(3);
    expect(last.totals.faults).toBe(done.summary!.samples);
    expect(last.totals.pages).toBe(done.summary!.pages);
    expect(windows.reduce((n, w) => n + w.faults, 0)).toBe(done.summary!.samples);
    expect(last.lostSamples).toBe(done.summary!.lostSamples);
    expect(windows.map((w) => w.seq)).toEqual(windows.map((_, i) => i));
    for (let i = 1; i < windows.length; i++) expect(windows[i]!.startUs).toBe(windows[i - 1]!.endUs);
    const bytes = (await logic.dispatch(CHANNELS.recordingTrace, [rec.id])) as Uint8Array;
    expect(bytes.length).toBe(done.summary!.sizeBytes);
    expect(String.fromCharCode(bytes[0]!, bytes[1]!)).toBe('PK');
  });

  it('stopRecording ends a long recording early with a valid trace', async () => {
    const rec = (await logic.dispatch(CHANNELS.startRecording, [
      { command: [testload, '--threads', '1', '--mib', '4', '--seconds', '60'] },
    ])) as Recording;
    await new Promise((r) => setTimeout(r, 600));
    const stopping = (await logic.dispatch(CHANNELS.stopRecording, [rec.id])) as Recording;
    expect(stopping.stopRequested).toBe(true);
    const done = await logic.recordings.settled(rec.id);
    expect(done.summary!.stopReason).toBe('signal');
    expect(((await logic.dispatch(CHANNELS.recordingTrace, [rec.id])) as Uint8Array).length).toBeGreaterThan(0);
    // Stopping does not kill: the command runs on (the binding reaps it when it exits); end it here.
    expect(done.summary!.leftRunning).toBe(true);
    expect(() => process.kill(done.summary!.pid, 0)).not.toThrow();
    process.kill(done.summary!.pid, 'SIGKILL');
  });

  it('a failing recording ends with status failed and an error', async () => {
    const rec = (await logic.dispatch(CHANNELS.startRecording, [{ command: ['/nonexistent/numascope-nothing'] }])) as Recording;
    const done = await logic.recordings.settled(rec.id);
    expect(done.status).toBe('failed');
    expect(done.error!.message.length).toBeGreaterThan(0);
    expect((live.get(rec.id)!.at(-1) as LiveEnd).status).toBe('failed');
    await expect(logic.dispatch(CHANNELS.recordingTrace, [rec.id])).rejects.toThrow(/failed/);
  });

  it('applies a dry-run plan to a live child', async () => {
    const child = spawn(testload, ['--threads', '2', '--mib', '4', '--seconds', '0.1', '--hold', '30'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d) => {
          out += d;
          if (/^holding /m.test(out) || /^done$/m.test(out)) resolve();
        });
        child.on('exit', (c) => reject(new Error(`testload exited early (${c}): ${out}`)));
      });
      const bufs = [...out.matchAll(/^buffer tid=(\d+) addr=0x([0-9a-f]+) len=(\d+)/gm)].map((m) => ({
        tid: Number(m[1]),
        addr: BigInt('0x' + m[2]),
        len: BigInt(m[3]!),
      }));
      expect(bufs).toHaveLength(2);
      const example = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs', 'examples', 'plan-move-and-pin.json'), 'utf8'));
      const plan = {
        ...example,
        target: { ...example.target, pid: child.pid, startTimeTicks: null, command: [testload], machine: { nodeIds: [0], distances: null } },
        pageRanges: bufs.map((b) => ({
          start: '0x' + b.addr.toString(16),
          end: '0x' + (b.addr + b.len).toString(16),
          action: 'move',
          toNodes: [0],
          expectedNodes: null,
          reason: 'worker buffer stays on node 0',
        })),
        threads: bufs.map((b) => ({ tid: b.tid, toNodes: [0], expectedNode: 0, reason: 'pin the worker to node 0' })),
        expected: null,
      };
      const report = (await logic.dispatch(CHANNELS.apply, [plan, { pid: child.pid, dryRun: true }])) as ApplyReport;
      expect(report.dryRun).toBe(true);
      expect(report.status).toBe('dry-run');
      expect(report.pid).toBe(child.pid);
      expect((report.ranges as unknown[]).length).toBe(2);
      expect((report.threads as unknown[]).length).toBe(2);
      expect(report.rollback).toBeUndefined();
      await expect(logic.dispatch(CHANNELS.apply, [plan, { pid: child.pid! + 1, dryRun: true }])).rejects.toThrow(/targets process/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
