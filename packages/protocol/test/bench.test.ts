// The calibrated machine model (a calibration file) is checked beyond its field types: matrices
// and lists the size of the node list, in the machine's node order.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchMachine, benchRequest, describeIssue } from '../src/index';

const fixture = JSON.parse(readFileSync(fileURLToPath(new URL('../fixtures/rust-messages.json', import.meta.url)), 'utf8')) as Record<string, unknown[]>;
const outcome = fixture.benchOutcome![0] as { machine: { calibration: Record<string, unknown>; nodes: unknown[] } };
const first = (m: unknown) => {
  const r = benchMachine.safeParse(m);
  return r.success ? 'ok' : describeIssue('machine', r.error.issues[0]!);
};

describe('benchMachine', () => {
  it('accepts the collector’s calibrated machine, complete and partial', () => {
    expect(first(outcome.machine)).toBe('ok');
    expect(first((fixture.benchOutcome![1] as { machine: unknown }).machine)).toBe('ok');
  });

  it('names a matrix that does not match the nodes', () => {
    const cal = outcome.machine.calibration;
    const latencyNs = (cal.latencyNs as unknown[][]).slice(0, 1);
    expect(first({ ...outcome.machine, calibration: { ...cal, latencyNs } })).toContain('calibration.latencyNs');
    expect(first({ ...outcome.machine, calibration: { ...cal, nodeIds: [1, 0] } })).toContain('calibration.nodeIds');
    expect(first({ ...outcome.machine, calibration: { ...cal, sustainedGBps: [1] } })).toContain('2 entries');
  });

  it('refuses a machine without calibration, or another tool’s', () => {
    const { calibration, ...plain } = outcome.machine;
    expect(first(plain)).toContain('calibration');
    expect(first({ ...outcome.machine, calibration: { ...calibration, tool: 'mlc' } })).toContain('calibration.tool');
  });

  it('checks the request ranges', () => {
    expect(benchRequest.safeParse({ quick: true, maxSeconds: 120 }).success).toBe(true);
    expect(benchRequest.safeParse({ chaseBytes: 10 }).success).toBe(false);
    expect(benchRequest.safeParse({ quik: true }).success).toBe(false);
  });
});
