/**
 * The manual placement editor of Compare's Manual column: threads, thread groups and memory
 * regions dragged onto nodes with the pointer, or, from the keyboard, selected (Enter/Space)
 * and placed with a node's "Place here" button. The placement lives in the URL (`man=`).
 */
import { useMemo, useRef, useState } from 'react';
import type { PointerEvent as ReactPointerEvent } from 'react';
import type { TraceSummary } from '@numascope/policy-engine';
import { formatBytes, formatCount, nodeLabel } from '@numascope/viz';
import type { RegionMeta } from '@numascope/policy-engine';
import { itemId, placeItem, placementMaps, threadGroups } from '../selectors/manual';
import type { ManualItem } from '../selectors/manual';
import { regionName } from '../selectors/summary';
import { useTraceQuery } from '../hooks/trace-context';
import type { ManualState } from '../url-state';

/** Regions offered at most (the largest by pages seen); the others stay as recorded. */
export const MANUAL_REGION_ITEMS = 40;
const RECORDED = 'recorded';

export function ManualEditor({
  summary,
  regions,
  value,
  onChange,
}: {
  summary: TraceSummary;
  regions: RegionMeta[];
  value: ManualState | null;
  onChange: (m: ManualState | null) => void;
}) {
  const table = useTraceQuery({ kind: 'regions', range: null });
  const nodes = summary.manifest.machine.nodes;
  const groups = useMemo(() => threadGroups(summary.threads), [summary.threads]);
  const regionItems = useMemo(() => {
    if (!table.data) return [];
    const S = table.data.slots;
    const pages = (r: number) => {
      let n = 0;
      for (let s = 0; s < S; s++) n += table.data!.pages[r * S + s]!;
      return n;
    };
    return regions
      .map((m) => ({ kind: 'region' as const, region: m.index, label: `#${m.index} ${regionName(m)}`, pages: pages(m.index) }))
      .filter((r) => r.pages > 0)
      .sort((a, b) => b.pages - a.pages || a.region - b.region);
  }, [regions, table.data]);
  const { threads: threadNode, regions: regionNode } = placementMaps(value);
  const shownRegions = regionItems.filter((r, i) => i < MANUAL_REGION_ITEMS || regionNode.has(r.region));
  const [picked, setPicked] = useState<ManualItem | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [drag, setDrag] = useState<{ item: ManualItem; over: string | null; x: number; y: number } | null>(null);
  const pointer = useRef<{ item: ManualItem; x: number; y: number; active: boolean } | null>(null);
  const suppressClick = useRef(false);

  const threadItems: ManualItem[] = summary.threads.map((t) => ({ kind: 'thread', thread: t.index, label: `${t.name || '(unnamed)'} · tid ${t.tid}` }));
  const groupItems: ManualItem[] = groups.map((g) => ({ kind: 'group', name: g.name, threads: g.threads, label: `${g.name} × ${g.threads.length}` }));
  const zoneOf = (item: ManualItem): string => {
    const n = item.kind === 'thread' ? threadNode.get(item.thread) : item.kind === 'region' ? regionNode.get(item.region) : undefined;
    return n === undefined ? RECORDED : String(n);
  };
  const hasCpus = (id: number) => (nodes.find((n) => n.id === id)?.cpus.length ?? 0) > 0;

  function place(item: ManualItem, zone: string) {
    if (zone !== RECORDED && item.kind !== 'region' && !hasCpus(Number(zone))) {
      setMessage(`${nodeLabel(Number(zone))} has no cpus (memory only): threads cannot run there. Place memory regions on it.`);
      return;
    }
    setMessage(null);
    onChange(placeItem(value, item, zone === RECORDED ? null : Number(zone)));
    setPicked(null);
  }

  const zoneAt = (x: number, y: number): string | null => document.elementFromPoint(x, y)?.closest('[data-zone]')?.getAttribute('data-zone') ?? null;

  function down(e: ReactPointerEvent<HTMLButtonElement>, item: ManualItem) {
    if (e.button !== 0) return;
    suppressClick.current = false;
    pointer.current = { item, x: e.clientX, y: e.clientY, active: false };
    e.currentTarget.setPointerCapture?.(e.pointerId);
  }
  function move(e: ReactPointerEvent<HTMLButtonElement>) {
    const p = pointer.current;
    if (!p) return;
    if (!p.active && Math.hypot(e.clientX - p.x, e.clientY - p.y) < 5) return;
    p.active = true;
    setDrag({ item: p.item, over: zoneAt(e.clientX, e.clientY), x: e.clientX, y: e.clientY });
  }
  function up(e: ReactPointerEvent<HTMLButtonElement>) {
    const p = pointer.current;
    pointer.current = null;
    if (!p?.active) return;
    suppressClick.current = true;
    setDrag(null);
    const zone = zoneAt(e.clientX, e.clientY);
    if (zone !== null && (p.item.kind === 'group' || zone !== zoneOf(p.item))) place(p.item, zone);
  }

  const chip = (item: ManualItem, extra?: string) => {
    const id = itemId(item);
    const selected = picked !== null && itemId(picked) === id;
    return (
      <button
        key={id}
        type="button"
        className={`manual-chip manual-chip--${item.kind}${selected ? ' manual-chip--picked' : ''}`}
        aria-pressed={selected}
        data-testid={`manual-item-${id}`}
        data-item={id}
        title={item.kind === 'group' ? `all ${item.threads.length} threads named ${item.name}` : undefined}
        onPointerDown={(e) => down(e, item)}
        onPointerMove={move}
        onPointerUp={up}
        onPointerCancel={() => {
          pointer.current = null;
          setDrag(null);
        }}
        onClick={(e) => {
          // The click that ends a drag does not select (a keyboard click, detail 0, always does).
          if (suppressClick.current && e.detail > 0) {
            suppressClick.current = false;
            return;
          }
          suppressClick.current = false;
          setPicked(selected ? null : item);
        }}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setPicked(null);
        }}
      >
        {item.label}
        {extra ? <span className="ns-muted small"> {extra}</span> : null}
      </button>
    );
  };

  const zones = [{ id: RECORDED, title: 'As recorded', note: 'where the recording has them' }, ...nodes.map((n) => ({ id: String(n.id), title: nodeLabel(n.id), note: n.cpus.length > 0 ? formatCount(n.cpus.length, 'cpu') : 'memory only, no cpus' }))];
  const placed = (value?.threads.length ?? 0) + (value?.regions.length ?? 0);

  return (
    <section className="panel manual-editor" data-testid="manual-editor" aria-labelledby="manual-heading">
      <h3 id="manual-heading">Manual placement (the Manual column)</h3>
      <p className="ns-muted hint">
        Drag threads, thread groups and memory regions onto a node. From the keyboard: select one (Enter or Space), then press a node’s “Place
        selected here”. Whatever stays in “As recorded” starts where the recording has it. The Manual column replays this placement with the
        engine’s manual policy; pages that end up on another node count as migrated.
      </p>
      <p data-testid="manual-summary" data-value={placed}>
        {placed === 0 ? 'Nothing placed by hand yet.' : `${formatCount(value?.threads.length ?? 0, 'thread')} and ${formatCount(value?.regions.length ?? 0, 'region')} placed by hand.`}{' '}
        {placed > 0 && (
          <button type="button" className="link-button" onClick={() => onChange(null)} data-testid="manual-reset">
            Put everything back as recorded
          </button>
        )}
        {picked && (
          <span className="manual-picked" role="status">
            {' '}
            Selected: <strong>{picked.label}</strong>. Press a node’s “Place selected here”, or Escape.
          </span>
        )}
      </p>
      {groupItems.length > 0 && (
        <div className="manual-groups" role="group" aria-label="Thread groups">
          <span className="ns-muted small">Thread groups (place every thread of the name):</span> {groupItems.map((g) => chip(g))}
        </div>
      )}
      {message && (
        <p className="notice notice--warn" role="alert" data-testid="manual-message">
          {message}
        </p>
      )}
      <div className="manual-zones">
        {zones.map((z) => {
          const nodeZone = z.id !== RECORDED;
          const refuses = picked !== null && nodeZone && picked.kind !== 'region' && !hasCpus(Number(z.id));
          return (
            <div
              key={z.id}
              className={`manual-zone${drag?.over === z.id ? ' manual-zone--over' : ''}`}
              data-zone={z.id}
              data-testid={`manual-zone-${z.id}`}
              role="group"
              aria-label={`${z.title}: ${z.note}`}
            >
              <div className="manual-zone__head">
                <strong>{z.title}</strong> <span className="ns-muted small">{z.note}</span>{' '}
                <button type="button" disabled={picked === null || refuses} onClick={() => picked && place(picked, z.id)} data-testid={`manual-place-${z.id}`}>
                  Place selected here
                </button>
              </div>
              <div className="manual-zone__items">
                {threadItems.filter((t) => zoneOf(t) === z.id).map((t) => chip(t))}
                {shownRegions.filter((r) => zoneOf(r) === z.id).map((r) => chip(r, `${formatCount(r.pages, 'page')}, ${formatBytes(r.pages * 4096)}`))}
              </div>
            </div>
          );
        })}
      </div>
      {regionItems.length > MANUAL_REGION_ITEMS && (
        <p className="ns-muted small">
          The {MANUAL_REGION_ITEMS} largest regions are offered; {formatCount(regionItems.length - MANUAL_REGION_ITEMS, 'smaller region')} stay as recorded.
        </p>
      )}
      {drag && (
        <div className="manual-ghost" style={{ left: drag.x + 12, top: drag.y + 12 }} aria-hidden="true">
          {drag.item.label}
        </div>
      )}
    </section>
  );
}
