/**
 * The Machine view: calibration files checked (clear errors on bad ones), calibrated vs preset vs
 * estimated figures with their provenance, and "Measure this machine" against a fake bench client
 * that answers the collector's own messages (packages/protocol/fixtures/rust-messages.json).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getPreset } from '@numascope/policy-engine';
import type { BenchRun } from '@numascope/protocol';
import type { BenchClient } from '../src/ui/live/client';
import { embeddedCalibration, parseCalibrationFile, provenanceKind, sideBySide } from '../src/ui/selectors/machine';
import { MachineView } from '../src/ui/views/MachineView';
import { summaryFixture } from './summary-fixture';

afterEach(cleanup);

const read = (rel: string) => readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8');
const BENCH_1NODE = read('../../../packages/policy-engine/test/fixtures/bench-quick-1node.json');
const fixture = JSON.parse(read('../../../packages/protocol/fixtures/rust-messages.json')) as { benchRun: BenchRun[] };
const [, running, finished, stopped] = fixture.benchRun as [BenchRun, BenchRun, BenchRun, BenchRun, BenchRun];

describe('parseCalibrationFile', () => {
  it('loads a real numascope bench output', () => {
    const r = parseCalibrationFile(BENCH_1NODE, 'bench.json');
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.calibration.tool).toBe('numascope-bench');
  });

  it('names what is wrong with a bad file and what to do', () => {
    const notJson = parseCalibrationFile('{"nodes": [', 'x.json');
    expect(!notJson.ok && notJson.error).toMatch(/^x\.json is not JSON .*numascope bench -o FILE/);
    const plain = JSON.parse(BENCH_1NODE) as Record<string, unknown>;
    delete plain['calibration'];
    const noCal = parseCalibrationFile(JSON.stringify(plain), 'm.json');
    expect(!noCal.ok && noCal.error).toMatch(/m\.json is not a numascope bench calibration: machine\.calibration.*no "calibration"/);
    const cal = JSON.parse(BENCH_1NODE) as { calibration: { latencyNs: unknown[] } };
    cal.calibration.latencyNs = [];
    const bad = parseCalibrationFile(JSON.stringify(cal), 'b.json');
    expect(!bad.ok && bad.error).toMatch(/calibration\.latencyNs.*1×1/);
  });
});

describe('sideBySide', () => {
  it('gives each number of each model with its provenance kind', () => {
    const summary = summaryFixture();
    const measured = parseCalibrationFile(JSON.stringify(finished.result!.machine), 'run');
    if (!measured.ok) throw new Error(measured.error);
    const rows = sideBySide([
      { key: 'calibrated', label: 'c', kind: 'calibrated', machine: measured.machine },
      { key: 'preset', label: 'p', kind: 'preset', machine: getPreset('amd-genoa-2s-nps1') },
      { key: 'estimated', label: 'e', kind: 'estimated', machine: summary.manifest.machine },
    ]);
    const bw = rows.find((r) => r.key === 'bw-0')!;
    expect(bw.cells[0]!.kind).toBe('measured');
    expect(bw.cells[0]!.value).toBeCloseTo(26.1, 1);
    // The preset's capacity: the engine's rule S1 over its datasheet bandwidth, said as estimated.
    expect(bw.cells[1]!.source).toMatch(/^estimated:S1 .*theoretical/);
    expect(bw.cells[1]!.kind).toBe('estimated');
    expect(bw.cells[2]!.kind).toBe('estimated');
    const lat = rows.find((r) => r.key === 'lat-0')!;
    expect(lat.cells[0]!.value).toBeCloseTo(92.5, 1);
    expect(rows.find((r) => r.key === 'remote-max')!.cells[0]!.value).toBeCloseTo(141, 0);
    expect(provenanceKind('unavailable:x')).toBe('unavailable');
    // No crossbar limit on these machines: no crossbar rows.
    expect(rows.some((r) => r.key.startsWith('xb-'))).toBe(false);
    // The clock PMU latencies are divided by: the bench machine's recorded one (sysfs), with its source; none for the Genoa preset.
    const clock = rows.find((r) => r.key === 'clock')!;
    expect(clock.unit).toBe('GHz');
    expect(clock.cells[0]).toMatchObject({ value: 3, kind: 'documented' });
    expect(clock.cells[0]!.source).toMatch(/acpi_cppc\/nominal_freq/);
    expect(clock.cells[1]).toMatchObject({ value: null, kind: 'unavailable' });
    expect(clock.cells[1]!.source).toMatch(/preset amd-genoa-2s-nps1 has no cpu clock figure/);
  });

  it('shows the northbridge capacity of a machine that has one (rule XB0) beside one that has none', () => {
    const rows = sideBySide([
      { key: 'amd', label: 'a', kind: 'preset', machine: getPreset('amd-opteron-6172-4p') },
      { key: 'intel', label: 'i', kind: 'preset', machine: getPreset('intel-xeon-x7560-4s') },
    ]);
    const xb = rows.find((r) => r.key === 'xb-0')!;
    expect(xb.label).toMatch(/northbridge/);
    expect(xb.cells[0]!.value).toBeCloseTo(55 / 8, 2);
    expect(xb.cells[0]!.source).toMatch(/^estimated:XB0/);
    expect(xb.cells[1]!.kind).toBe('unavailable');
    expect(xb.cells[1]!.source).toMatch(/no crossbar limit documented/);
    // Its controllers then take rule S1.
    expect(rows.find((r) => r.key === 'bw-0')!.cells[0]!.source).toMatch(/^estimated:S1 .*XB0/);
  });
});

function fakeClient(script: BenchRun[]): BenchClient & { stopBench: ReturnType<typeof vi.fn> } {
  let i = 0;
  const next = () => Promise.resolve(script[Math.min(i++, script.length - 1)]!);
  return { startBench: vi.fn(next), benchStatus: vi.fn(next), stopBench: vi.fn(() => Promise.resolve({ ...running, stopRequested: true })) };
}

describe('MachineView', () => {
  it('says which model the views use and why; no calibration yet', () => {
    render(<MachineView summary={summaryFixture()} bench={null} />);
    expect(screen.getByTestId('machine-choice').dataset.used).toBe('recorded');
    expect(screen.getByTestId('no-calibration')).toBeTruthy();
    expect(screen.getByTestId('measure-unavailable').textContent).toMatch(/numascope serve/);
    // preset and estimated columns, with provenance on every number
    expect(screen.getByTestId('side-by-side').querySelectorAll('thead th[data-kind]').length).toBe(2);
    for (const td of screen.getByTestId('side-by-side').querySelectorAll('td')) expect(td.getAttribute('title')).toBeTruthy();
  });

  it('measures with progress, then shows the calibration beside the preset and the estimate', async () => {
    const client = fakeClient([running, running, finished]);
    render(<MachineView summary={summaryFixture()} bench={client} />);
    fireEvent.click(screen.getByTestId('measure-start'));
    await waitFor(() => expect(screen.getByTestId('measure-progress').textContent).toMatch(/step 2 of 12 · 4\.2 s elapsed · about 21 s left/));
    await waitFor(() => expect(screen.getByTestId('measure').dataset.status).toBe('finished'), { timeout: 3000 });
    expect(client.startBench).toHaveBeenCalledWith({ quick: true });
    expect(screen.getByTestId('measure-done').textContent).toMatch(/Stored as this machine's calibration/);
    expect(screen.getByTestId('calibration-details').dataset.origin).toBe('measured-now');
    expect(screen.getByTestId('side-by-side').querySelector('td[data-column="calibrated"]')!.getAttribute('data-kind')).toBe('measured');
    expect(screen.getByTestId('cal-triad').textContent).toContain('23.9');
    expect(screen.getByTestId('curve-0').dataset.points).toBe('2');
  });

  it('cancel asks the server to stop and shows the partial result', async () => {
    const client = fakeClient([running, running, running, running, running, stopped]);
    render(<MachineView summary={summaryFixture()} bench={client} />);
    fireEvent.click(screen.getByTestId('measure-start'));
    fireEvent.click(await screen.findByTestId('measure-cancel'));
    expect(client.stopBench).toHaveBeenCalledWith(running.id);
    await waitFor(() => expect(screen.getByTestId('measure-done').dataset.partial).toBe('true'), { timeout: 4000 });
    expect(screen.getByTestId('measure-done').textContent).toMatch(/Stopped: 1 of 12 steps measured .*not stored/);
    expect(screen.getByTestId('calibration-partial')).toBeTruthy();
  });

  it('a bad calibration file gives a clear error; a good one is loaded and compared', async () => {
    render(<MachineView summary={summaryFixture()} bench={null} />);
    const input = screen.getByTestId('calibration-file') as HTMLInputElement;
    fireEvent.change(input, { target: { files: [new File(['not json'], 'broken.json')] } });
    expect((await screen.findByTestId('calibration-error')).textContent).toMatch(/broken\.json is not JSON/);
    fireEvent.change(input, { target: { files: [new File([JSON.stringify(finished.result!.machine)], 'box.json')] } });
    await screen.findByTestId('calibration-loaded');
    expect(screen.queryByTestId('calibration-error')).toBeNull();
    expect(screen.getByTestId('calibration-details').dataset.origin).toBe('loaded-file');
    // The fixture trace has nodes 0-1 with 4 cpus each; the file's box has 2 cpus each: a re-target.
    expect(screen.getByTestId('machine-choice-file').dataset.used).toBe('target-machine');
  });

  it('a trace with an embedded calibration: the views use it', () => {
    const summary = summaryFixture();
    const machine = finished.result!.machine;
    const manifest = { ...summary.manifest, calibration: { ...machine, nodes: summary.manifest.machine.nodes.map((n, i) => ({ ...machine.nodes[i]!, cpus: n.cpus })) } };
    expect(embeddedCalibration(manifest)).not.toBeNull();
    render(<MachineView summary={{ ...summary, manifest } as typeof summary} bench={null} />);
    expect(screen.getByTestId('machine-choice').dataset.used).toBe('embedded-calibration');
    expect(screen.getByTestId('calibration-details').dataset.origin).toBe('embedded');
  });
});
