// The Apply panel's report of a weighted-interleave apply and its rollback, from the collector's
// own serde output (packages/protocol/fixtures/rust-messages.json): each range's weights and their
// verification, and the system-wide weights before, asked and read back.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { applyReport, type ApplyReport } from '@numascope/protocol';
import { Report } from '../src/ui/live/ApplyPanel';

// (jsdom gives import.meta.url an http scheme: the path is taken from this file's directory instead)
const fixture = JSON.parse(readFileSync(resolve(__dirname, '../../../packages/protocol/fixtures/rust-messages.json'), 'utf8')) as { applyReport: unknown[] };
const reports = fixture.applyReport.map((r) => applyReport.parse(r));
const weighted = (operation: ApplyReport['operation']) => reports.find((r) => r.operation === operation && r.systemWeights)!;

afterEach(cleanup);

describe('Apply report: weighted interleave and system weights', () => {
  it('an apply shows each range\'s weights, their check, and the system weights before / planned / after', () => {
    const r = weighted('apply');
    render(<Report report={r} testId="rep" title="Apply" ms={12} />);
    const ranges = screen.getByTestId('rep-ranges');
    expect(ranges.textContent).toMatch(/weighted-interleave → node 0 ×4, node 1 ×1/);
    const check = screen.getByTestId('rep-weight-check-0');
    expect(check.dataset.ok).toBe('true');
    expect(check.textContent).toMatch(/weights verified: found node 0 [\d,]+, node 1 [\d,]+, expected node 0/);
    const table = screen.getByTestId('rep-system-weights');
    expect(table.dataset.matched).toBe('true');
    expect(table.textContent).toMatch(/written; global.*read back as asked/s);
    const row0 = within(screen.getByTestId('rep-system-weight-0')).getAllByRole('cell').map((c) => c.textContent);
    expect(row0).toEqual(['1', '4', '4']);
    expect(table.textContent).toMatch(/auto \(the kernel computes them\).*manual/s);
  });

  it('a rollback says the weights were restored to the snapshot, auto mode included', () => {
    const r = weighted('rollback');
    render(<Report report={r} testId="rb" title="Rollback" ms={3} />);
    const table = screen.getByTestId('rb-system-weights');
    expect(table.textContent).toMatch(/restored/);
    expect(within(table).getByText('snapshot')).toBeTruthy();
    const row0 = within(screen.getByTestId('rb-system-weight-0')).getAllByRole('cell').map((c) => c.textContent);
    expect(row0).toEqual(['4', '1', '1']);
  });

  it('a weight check that failed reads NOT met, and weights not read back as asked say so', () => {
    const r = structuredClone(weighted('apply'));
    r.ranges[0]!.weightCheck!.ok = false;
    r.systemWeights!.matched = false;
    render(<Report report={r} testId="bad" title="Apply" ms={1} />);
    expect(screen.getByTestId('bad-weight-check-0').textContent).toMatch(/weights NOT met/);
    expect(screen.getByTestId('bad-system-weights').textContent).toMatch(/NOT as asked/);
  });
});
