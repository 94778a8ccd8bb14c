// The live window's accesses and bandwidth fields (issue 35): PMU samples as an access source,
// per-node memory-controller bandwidth from the uncore counters, and toLiveWindow carrying both.
import { describe, expect, it } from 'vitest';
import { collectorWindow, liveWindow, parseLiveMessageValue, ProtocolError, toLiveWindow } from '../src/live';
import { rustExample } from '../fixtures';

describe('live window: accesses and bandwidth', () => {
  it('the collector examples carry both sources: hinting faults with uncore read/write, PMU samples with a combined count', () => {
    const [w0, w1] = [rustExample('liveWindow', 0), rustExample('liveWindow', 1)];
    expect([w0.accessSource, w0.bandwidthSource]).toEqual(['hinting-faults', 'uncore']);
    expect(w0.bandwidth[0]).toEqual({ node: 0, readBytesPerS: 1.25e9, writeBytesPerS: 4.5e8, bytesPerS: 1.7e9 });
    expect(w1.accessSource).toBe('pmu-samples');
    expect(w1.bandwidth[0]).toEqual({ node: 0, readBytesPerS: null, writeBytesPerS: null, bytesPerS: 9.5e8 });
  });

  it('toLiveWindow carries bandwidth and its source as they are', () => {
    const c = rustExample('collectorWindow', 0);
    const w = liveWindow.parse(toLiveWindow('r1', c));
    expect(w.bandwidth).toEqual(c.bandwidth);
    expect(w.bandwidthSource).toBe(c.bandwidthSource);
    const none = liveWindow.parse(toLiveWindow('r1', { ...c, bandwidth: [], bandwidthSource: null }));
    expect([none.bandwidth, none.bandwidthSource]).toEqual([[], null]);
  });

  it('refuses a bandwidth that is negative, of an unknown node or source, or has an extra field; both fields are required', () => {
    const w = rustExample('liveWindow', 0);
    const bad = (patch: Record<string, unknown>) => () => parseLiveMessageValue({ ...w, ...patch });
    expect(bad({ bandwidth: [{ node: 0, readBytesPerS: -1, writeBytesPerS: 0, bytesPerS: 0 }] })).toThrow(/window\.bandwidth\[0\]\.readBytesPerS/);
    expect(bad({ bandwidth: [{ node: -1, readBytesPerS: null, writeBytesPerS: null, bytesPerS: 1 }] })).toThrow(ProtocolError);
    expect(bad({ bandwidth: [{ node: 0, readBytesPerS: null, writeBytesPerS: null, bytesPerS: 1, gbps: 1 }] })).toThrow(/unexpected field/);
    expect(bad({ bandwidthSource: 'imc' })).toThrow(/window\.bandwidthSource/);
    expect(bad({ accessSource: 'ibs' })).toThrow(/window\.accessSource/);
    const { bandwidthSource: _drop, ...missing } = w;
    expect(() => parseLiveMessageValue(missing)).toThrow(/window\.bandwidthSource/);
    expect(collectorWindow.safeParse({ ...rustExample('collectorWindow', 0), bandwidth: undefined }).success).toBe(false);
  });
});
