/**
 * A trace imported from a perf.data file without memory samples (a `cycles` profile) gets advice
 * that fits an import (record memory samples with perf and import that), not "record it again"
 * (issue 35).
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { readTrace } from '../src/trace/reader.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

function messageOf(kind: 'imported' | 'recorded'): string {
  const m = minimalManifest();
  m.origin = { ...m.origin, kind, generator: kind === 'imported' ? 'numascope import' : 'numascope record', from: kind === 'imported' ? 'cycles.perf.data' : null };
  try {
    analyze(readTrace(writeTrace(m, emptyColumns())), { accessEstimate: 'auto' });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('analyze accepted an empty trace');
}

describe('an empty import', () => {
  it('names the perf.data file and says how to record memory samples', () => {
    const text = messageOf('imported');
    expect(text).toContain('imported from cycles.perf.data, which holds no memory-access samples');
    expect(text).toContain('perf mem record');
    expect(text).not.toContain('record it again');
  });
  it('a recording keeps its own advice', () => {
    expect(messageOf('recorded')).toContain('record it again');
  });
});
