// @vitest-environment node
import { describe, expect, it } from 'vitest';
import { parseTraceBytes } from '../src/worker/open';
import { fixtureTraceBytes, withManifest } from '../../../e2e/fixtures/trace-fixture';

describe('parseTraceBytes (what the Worker runs)', () => {
  it('summarises a good trace', () => {
    const r = parseTraceBytes(fixtureTraceBytes());
    if (!('summary' in r)) throw new Error(`expected a summary, got ${JSON.stringify(r.error)}`);
    expect(r.summary.totals).toMatchObject({ samples: 30, pages: 10, threads: 3, accesses: 3000 });
    expect(r.summary.nodes.map((n) => n.pagesSeen)).toEqual([6, 3]);
    // What the Worker posts must survive structured cloning.
    expect(structuredClone(r.summary)).toEqual(r.summary);
  });

  it('turns a TraceError into a code and a message', () => {
    const r = parseTraceBytes(new TextEncoder().encode('not a zip'));
    expect(r).toEqual({ error: { code: 'not-zip', message: expect.stringContaining('ZIP') } });
  });

  it('reports a too-new file by code', () => {
    const r = parseTraceBytes(withManifest(fixtureTraceBytes(), (m) => (m.version = 999)));
    expect('error' in r && r.error.code).toBe('too-new');
  });

  it('reports a non-TraceError failure as an internal error, not a crash', () => {
    let calls = 0;
    // Fails after reading (second clock read), standing in for any unexpected exception.
    const r = parseTraceBytes(fixtureTraceBytes(), () => {
      if (calls++ > 0) throw new Error('clock broke');
      return 0;
    });
    expect(r).toEqual({ error: { code: 'internal', message: expect.stringContaining('clock broke') } });
  });
});
