import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CapabilityBadge,
  CapabilityList,
  DistanceMatrix,
  LinkDiagram,
  MachineNodes,
  NodeBarChart,
  NodeLegend,
  ThreadTimeline,
  formatCount,
} from '../src/index.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

describe('CapabilityBadge', () => {
  it('shows metric and status as text and the reason as its accessible description', () => {
    render(<CapabilityBadge metric="access-latency" status="unavailable" reason="no ibs_op PMU: this is a VM" />);
    const body = screen.getByText('Access latency').parentElement!;
    expect(body.getAttribute('tabindex')).toBe('0');
    expect(within(body).getByText('unavailable')).toBeTruthy();
    const tooltip = screen.getByRole('tooltip');
    expect(body.getAttribute('aria-describedby')).toBe(tooltip.id);
    expect(tooltip.textContent).toBe('no ibs_op PMU: this is a VM');
    expect(screen.getByTestId('capability-access-latency').dataset.status).toBe('unavailable');
  });

  it('is reachable by keyboard focus', () => {
    render(<CapabilityBadge metric="page-placement" status="measured" reason="numa_maps every 100 ms" />);
    const body = screen.getByText('Page placement').parentElement!;
    body.focus();
    expect(document.activeElement).toBe(body);
  });

  it('lists measured before unavailable', () => {
    render(
      <CapabilityList
        capabilities={[
          { metric: 'ipc', status: 'unavailable', reason: 'no PMU' },
          { metric: 'page-placement', status: 'measured', reason: 'numa_maps' },
          { metric: 'memory-accesses', status: 'synthetic', reason: 'generated' },
        ]}
      />,
    );
    const items = screen.getAllByRole('listitem').map((li) => li.querySelector('[data-status]')!.getAttribute('data-status'));
    expect(items).toEqual(['measured', 'synthetic', 'unavailable']);
  });
});

describe('NodeBarChart', () => {
  it('renders one bar per node with its value and share', () => {
    const { container } = render(
      <NodeBarChart
        title="Pages seen (4 KiB pages)"
        nodeIds={[0, 1]}
        data={[
          { node: 0, value: 3000 },
          { node: 1, value: 1000 },
        ]}
        format={(v) => formatCount(v, 'page')}
      />,
    );
    const bars = container.querySelectorAll('g[data-node]');
    expect(bars).toHaveLength(2);
    expect(bars[0]!.textContent).toContain('3,000 pages · 75.0%');
    expect(bars[1]!.textContent).toContain('1,000 pages · 25.0%');
    expect(bars[0]!.querySelector('title')!.textContent).toBe('node 0: 3,000 pages (75.0% of total)');
    const w0 = Number(bars[0]!.querySelector('rect')!.getAttribute('width'));
    const w1 = Number(bars[1]!.querySelector('rect')!.getAttribute('width'));
    expect(w0 / w1).toBeCloseTo(3, 5);
  });

  it('copes with all-zero data', () => {
    const { container } = render(
      <NodeBarChart title="Accesses" nodeIds={[0]} data={[{ node: 0, value: 0 }]} format={(v) => formatCount(v)} />,
    );
    expect(container.querySelector('g[data-node]')!.textContent).toContain('0 · –');
  });
});

describe('ThreadTimeline', () => {
  const threads = [
    { index: 0, tid: 100, name: 'main', placements: { timeUs: [0, 500_000], cpu: [0, 4], node: [0, 1] } },
    { index: 1, tid: 101, name: 'worker', placements: { timeUs: [0], cpu: [2], node: [0] } },
  ];

  it('draws one SVG bar per run, coloured by node, cpu in the tooltip', () => {
    const { container } = render(<ThreadTimeline threads={threads} durationUs={1_000_000} nodeIds={[0, 1]} />);
    const root = container.querySelector('.ns-timeline') as HTMLElement;
    expect(root.dataset.render).toBe('svg');
    const rects = container.querySelectorAll('rect');
    expect(rects).toHaveLength(3);
    expect(rects[1]!.querySelector('title')!.textContent).toBe('main · tid 100: cpu 4, node 1, 500 ms – 1.00 s');
    expect(rects[0]!.getAttribute('fill')).toBe('#0072B2');
    expect(rects[1]!.getAttribute('fill')).toBe('#E69F00');
    expect(screen.getByText('worker · tid 101')).toBeTruthy();
    expect(screen.getByText('1 s')).toBeTruthy(); // an axis tick
  });

  it('switches to a canvas past the threshold', () => {
    // jsdom has no 2D context; the chart must cope with getContext() returning null.
    vi.spyOn(HTMLCanvasElement.prototype, 'getContext').mockReturnValue(null);
    const { container } = render(
      <ThreadTimeline threads={threads} durationUs={1_000_000} nodeIds={[0, 1]} canvasThreshold={2} />,
    );
    const root = container.querySelector('.ns-timeline') as HTMLElement;
    expect(root.dataset.render).toBe('canvas');
    expect(root.dataset.segments).toBe('3');
    const canvas = container.querySelector('canvas')!;
    expect(canvas.getAttribute('aria-label')).toContain('2 threads');
    fireEvent.mouseMove(canvas, { clientX: 0, clientY: 0 }); // jsdom: no layout, must not throw
  });

  it('says so when there are no threads', () => {
    render(<ThreadTimeline threads={[]} durationUs={10} nodeIds={[0]} />);
    expect(screen.getByText('The trace has no threads.')).toBeTruthy();
  });
});

describe('machine views', () => {
  it('DistanceMatrix writes every distance and latency', () => {
    render(
      <DistanceMatrix
        nodeIds={[0, 1]}
        distances={[
          [10, 21],
          [21, 10],
        ]}
        latenciesNs={[
          [90, 140.4],
          [140, 90],
        ]}
      />,
    );
    expect(screen.getByTestId('distance-0-1').textContent).toBe('21140 ns');
    expect(screen.getByTestId('distance-1-1').dataset.value).toBe('10');
    expect(screen.getAllByRole('columnheader').map((th) => th.textContent)).toEqual([
      'from node, to nodefrom \\ to',
      'node 0',
      'node 1',
    ]);
  });

  it('MachineNodes shows cpus and memory with units', () => {
    render(
      <MachineNodes
        nodes={[
          { id: 0, cpus: [0, 1, 2, 3], memoryBytes: 16 * 1024 ** 3, memoryBandwidthGBps: 25.6 },
          { id: 1, cpus: [], memoryBytes: null },
        ]}
      />,
    );
    expect(screen.getByTestId('machine-node-0-cpus').textContent).toBe('0-3 (4 cpus)');
    expect(screen.getByTestId('machine-node-0-memory').textContent).toBe('16.0 GiB');
    expect(screen.getByText('25.6 GB/s')).toBeTruthy();
    expect(screen.getByTestId('machine-node-1-cpus').textContent).toBe('none (memory only)');
    expect(screen.getByTestId('machine-node-1-memory').textContent).toBe('unknown');
  });

  it('LinkDiagram draws each directed link with its capacity', () => {
    const { container } = render(
      <LinkDiagram
        nodeIds={[0, 1]}
        links={[
          { from: 0, to: 1, capacityGBps: 12.8 },
          { from: 1, to: 0, capacityGBps: null },
        ]}
      />,
    );
    const titles = [...container.querySelectorAll('line title')].map((t) => t.textContent);
    expect(titles).toEqual(['node 0 → node 1: 12.8 GB/s', 'node 1 → node 0: unknown']);
  });

  it('NodeLegend names every node', () => {
    render(<NodeLegend nodeIds={[0, 1]} includeUnknown />);
    expect(screen.getAllByRole('listitem').map((li) => li.textContent)).toEqual(['node 0', 'node 1', 'unknown node']);
  });
});
