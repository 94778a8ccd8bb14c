/**
 * Labels from one vocabulary (issue 30): a count the trace could not measure says UNAVAILABLE, as
 * the capability badge does, not "measured: not sampled".
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { openTraceBytes } from '../src/worker/open';
import { TotalsStrip } from '../src/ui/views/TotalsStrip';

afterEach(cleanup);
const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const summaryOf = (name: string) => {
  const opened = openTraceBytes(new Uint8Array(readFileSync(path.join(SAMPLES, name))), 1);
  if (!('summary' in opened)) throw new Error('did not open');
  return opened.summary;
};

describe('the totals strip labels', () => {
  it('a recording without access samples: memory accesses UNAVAILABLE, not measured', () => {
    render(<TotalsStrip summary={summaryOf('recorded-testload-4threads.numascope')} />);
    expect(screen.getByTestId('total-card-accesses').dataset.provenance).toBe('unavailable');
    expect(screen.getByTestId('total-prov-accesses').textContent).toBe('unavailable');
  });
  it('a trace with access samples: estimated (samples × weights)', () => {
    render(<TotalsStrip summary={summaryOf('streamcluster-hotspot.numascope')} />);
    // synthetic traces say so instead
    expect(screen.getByTestId('total-card-accesses').dataset.provenance).toBe('synthetic');
  });
});
