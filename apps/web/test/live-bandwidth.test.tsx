// The Live screen with PMU-sample accesses and uncore bandwidth (issue 35): the per-node table's
// bandwidth column (read / write per second, or both together), the accesses column naming its
// source, and the two notes saying where the numbers come from.
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { rustExample } from '@numascope/protocol/fixtures';
import type { LiveWindow } from '@numascope/protocol';
import { accessesNote, bandwidthNote, formatRate, LiveNumbers } from '../src/ui/live/LiveView';
import { initialState } from '../src/ui/live/machine';

afterEach(cleanup);

/** A window of a two-node machine with PMU samples and uncore counters, as the collector would send it. */
function pmuWindow(): LiveWindow {
  const w = rustExample('liveWindow', 0);
  return {
    ...w,
    accessSource: 'pmu-samples',
    accesses: [{ node: 0, local: 30, remote: 10 }],
    totals: { ...w.totals, accesses: [{ node: 0, local: 300, remote: 100 }, { node: 1, local: 50, remote: 0 }], faultsByNode: [{ node: 0, count: 10 }, { node: 1, count: 5 }] },
    bandwidth: [
      { node: 0, readBytesPerS: 2 * 1024 ** 3, writeBytesPerS: 512 * 1024 ** 2, bytesPerS: 2.5 * 1024 ** 3 },
      { node: 1, readBytesPerS: null, writeBytesPerS: null, bytesPerS: 1024 ** 3 },
    ],
    bandwidthSource: 'uncore',
  };
}

describe('Live: bandwidth per node and PMU accesses', () => {
  it('shows read / write per node from the uncore counters, a combined count as such, and names the access source', () => {
    const w = pmuWindow();
    render(<LiveNumbers w={w} windows={[w]} nodeIds={[0, 1]} />);
    const table = screen.getByTestId('live-nodes');
    expect(table.textContent).toMatch(/memory bandwidth, last window: read \/ write \(uncore, whole machine\)/);
    expect(table.textContent).toMatch(/local \/ remote \(PMU samples, since the start\)/);
    const b0 = screen.getByTestId('live-node-0-bandwidth');
    expect(b0.textContent).toBe('2.00 GiB/s / 512 MiB/s');
    expect(Number(b0.dataset.total)).toBe(2.5 * 1024 ** 3);
    expect(screen.getByTestId('live-node-1-bandwidth').textContent).toBe('1.00 GiB/s (read + write)');
    expect(screen.getByTestId('live-node-0-accesses').textContent).toBe('300 / 100');
    expect(screen.getByTestId('live-node-0-local').textContent).toBe('75.0%');
  });

  it('without uncore counters there is no bandwidth column, and the note says why', () => {
    const w = { ...pmuWindow(), bandwidth: [], bandwidthSource: null };
    render(<LiveNumbers w={w} windows={[w]} nodeIds={[0, 1]} />);
    expect(screen.queryByTestId('live-node-0-bandwidth')).toBeNull();
    expect(screen.getByTestId('live-nodes').textContent).not.toMatch(/bandwidth/);
    const n = bandwidthNote(w);
    expect(n.shown).toBe(false);
    expect(n.text).toMatch(/no memory-controller uncore counters/);
  });

  it('a node without a reading this window shows a dash', () => {
    const w = { ...pmuWindow(), bandwidth: [] };
    render(<LiveNumbers w={w} windows={[w]} nodeIds={[0, 1]} />);
    expect(screen.getByTestId('live-node-0-bandwidth').textContent).toBe('–');
  });

  it('the notes: PMU samples counted live, uncore bandwidth for the whole machine', () => {
    const w = pmuWindow();
    const a = accessesNote(initialState(true), w);
    expect(a.shown).toBe(true);
    expect(a.text).toMatch(/PMU memory samples \(AMD IBS \/ Intel PEBS\), counted live/);
    expect(a.text).toMatch(/hinting faults are not added/);
    const b = bandwidthNote(w);
    expect(b.shown).toBe(true);
    expect(b.text).toMatch(/uncore counters/);
    expect(b.text).toMatch(/whole machine/);
    expect(formatRate(null)).toBe('–');
  });
});
