// The Apply panel's launch with a plan: the "Also set the system weights" box reaches the launch
// (restored when the program exits) only when ticked; without it the launch asks for nothing global.
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rustExample } from '@numascope/protocol/fixtures';
import { ApplyPanel } from '../src/ui/live/ApplyPanel';
import type { LiveClient } from '../src/ui/live/client';

afterEach(cleanup);

const plan = {
  format: 'numascope-plan',
  version: 1,
  source: { policy: 'weighted-interleave' },
  target: { pid: 1, command: ['/usr/bin/true'], machine: { nodeIds: [0, 1] } },
  pageRanges: [],
  threads: [],
  objects: [{ site: 'buffer at points.c:84', policy: 'weighted-interleave', nodes: [0, 1] }],
  systemWeights: { weights: { 0: 3, 1: 1 }, reason: 'test' },
};

function panel() {
  const runPlan = vi.fn(async (_req: unknown, _onLaunched?: unknown) => rustExample('runReport', 1));
  const api = { runPlan, apply: vi.fn(), rollback: vi.fn() } as unknown as LiveClient;
  render(<ApplyPanel api={api} processes={[]} recordedPid={null} onRefresh={() => {}} />);
  return runPlan;
}

async function loadPlan() {
  const input = screen.getByTestId('apply-plan-file');
  fireEvent.change(input, { target: { files: [new File([JSON.stringify(plan)], 'plan.json', { type: 'application/json' })] } });
  await waitFor(() => expect(screen.getByTestId('apply-system-weights')).toBeTruthy());
}

describe('Launch with this plan and the system weights', () => {
  it('sends setSystemWeights with the launch when the box is ticked', async () => {
    const runPlan = panel();
    await loadPlan();
    const box = screen.getByTestId('apply-system-weights').querySelector('input')!;
    expect(box.checked).toBe(false);
    expect(screen.getByTestId('apply-system-weights').textContent).toMatch(/N0=3 N1=1.*a launch with the plan: until the program exits/s);
    fireEvent.click(box);
    fireEvent.click(screen.getByTestId('apply-launch'));
    await waitFor(() => expect(runPlan).toHaveBeenCalledTimes(1));
    expect(runPlan.mock.calls[0]![0]).toEqual({ plan, setSystemWeights: true });
    await waitFor(() => expect(screen.getByTestId('apply-launch-result')).toBeTruthy());
  });

  it('asks for nothing global when the box is left alone', async () => {
    const runPlan = panel();
    await loadPlan();
    fireEvent.click(screen.getByTestId('apply-launch'));
    await waitFor(() => expect(runPlan).toHaveBeenCalledTimes(1));
    expect(runPlan.mock.calls[0]![0]).toEqual({ plan });
  });
});
