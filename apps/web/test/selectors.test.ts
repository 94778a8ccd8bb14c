import { describe, expect, it } from 'vitest';
import { cpuCount, nodeRows, recordedCommand, shellQuote, threadRows } from '../src/ui/selectors/summary';
import { summaryFixture } from './summary-fixture';

describe('nodeRows', () => {
  it('gives shares of the totals and an unknown-node row', () => {
    const rows = nodeRows(summaryFixture());
    expect(rows.map((r) => [r.id, r.pagesSeen, r.samples, r.accesses, r.shareOfAccesses.toFixed(3), r.shareOfPages.toFixed(2)])).toEqual([
      [0, 6, 18, 1800, '0.600', '0.60'],
      [1, 3, 9, 900, '0.300', '0.30'],
      [-1, 1, 3, 300, '0.100', '0.10'],
    ]);
  });

  it('leaves out the unknown row when every page and sample has a node', () => {
    const s = summaryFixture();
    s.unknownNode = { pagesSeen: 0, samples: 0, accesses: 0, faults: 0 };
    expect(nodeRows(s).map((r) => r.id)).toEqual([0, 1]);
  });

  it('shares are NaN (shown as –) when there is nothing to share', () => {
    const s = summaryFixture();
    s.nodes.forEach((n) => (n.accesses = 0));
    s.unknownNode.accesses = 0;
    expect(Number.isNaN(nodeRows(s)[0]!.shareOfAccesses)).toBe(true);
  });
});

describe('threadRows', () => {
  it('lists the distinct cpus and nodes a thread ran on', () => {
    expect(threadRows(summaryFixture()).map((t) => [t.name, t.cpus, t.nodes, t.migrations])).toEqual([
      ['main', [0], [0], 0],
      ['worker-1', [1, 5], [0, 1], 1],
      ['worker-2', [6], [1], -1],
    ]);
  });
});

describe('commands', () => {
  it('quotes arguments only where a shell needs it', () => {
    expect(shellQuote('./stream')).toBe('./stream');
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });
  it('prefers the process argv over the recorder command', () => {
    expect(recordedCommand(summaryFixture())).toBe('./stream --threads 3');
    expect(cpuCount(summaryFixture())).toBe(8);
  });
});
