// What the Live screen says about accesses (issue 35 item 1): the source in use, or why there is
// none on this machine and what would give one; `--numa-balancing on` offered only where it helps.
import { describe, expect, it } from 'vitest';
import { rustExample } from '@numascope/protocol/fixtures';
import type { LiveWindow, Machine, Probe } from '@numascope/protocol';
import { accessesNote, balancingOffered } from '../src/ui/live/LiveView';
import { initialState } from '../src/ui/live/machine';
import type { LiveState } from '../src/ui/live/machine';

function state(nodes: number, balancing: string | null): LiveState {
  const probe = structuredClone(rustExample('probe')) as Probe;
  probe.placement = (probe.placement ?? []).filter((f) => f.id !== 'numa-balancing');
  if (balancing) probe.placement.push({ id: 'numa-balancing', state: balancing, value: null, meaning: '' });
  const machine = structuredClone(rustExample('machine')) as Machine;
  const node = machine.nodes[0]!;
  machine.nodes = Array.from({ length: nodes }, (_, id) => ({ ...node, id }));
  return { ...initialState(true), probe, topology: machine };
}

const window = (source: LiveWindow['accessSource']): LiveWindow => ({ ...structuredClone(rustExample('liveWindow', 0)), accessSource: source });

describe('accesses on the Live screen', () => {
  it('one node: says every access is local, why nothing is sampled, and names the PMU reason', () => {
    const n = accessesNote(state(1, 'off'), window(null));
    expect(n.shown).toBe(false);
    expect(n.text).toMatch(/one NUMA node/);
    expect(n.text).toMatch(/no ibs_op PMU/);
    expect(balancingOffered(state(1, 'off'))).toBe(false);
  });

  it('two nodes with balancing off: offers --numa-balancing on, and says so', () => {
    expect(balancingOffered(state(2, 'off'))).toBe(true);
    expect(accessesNote(state(2, 'off'), window(null)).text).toMatch(/Switch automatic NUMA balancing on/);
    expect(balancingOffered(state(2, 'on'))).toBe(false);
    expect(accessesNote(state(2, 'on'), window(null)).text).toMatch(/no hinting fault was classified yet/);
    expect(balancingOffered(state(4, null))).toBe(false);
  });

  it('says PMU samples are counted live when a recording has them, and that a PMU here would give them', () => {
    const n = accessesNote(state(2, 'on'), window('pmu-samples'));
    expect(n.shown).toBe(true);
    expect(n.text).toMatch(/PMU memory samples/);
    expect(n.text).toMatch(/counted live/);
    const s = state(2, 'off');
    s.probe!.sources = s.probe!.sources.map((x) => (/ibs|pebs|pmu|mem/i.test(x.id) ? { ...x, available: true } : x));
    if (s.probe!.sources.some((x) => /ibs|pebs|pmu|mem/i.test(x.id))) {
      expect(accessesNote(s, window(null)).text).toMatch(/counts its samples as accesses live/);
    }
  });

  it('hinting faults: says what local and remote mean, as samples', () => {
    const n = accessesNote(state(2, 'on'), window('hinting-faults'));
    expect(n.shown).toBe(true);
    expect(n.text).toMatch(/NUMA hinting faults/);
    expect(n.text).toMatch(/samples of accesses/);
  });
});
