/**
 * Long tables, every row reachable (issue 32: no "showing the first 500"): up to `eager` rows are
 * rendered as they are; a longer table scrolls inside its own box and renders only the rows in
 * view (@tanstack/react-virtual), with spacer rows above and below so the scrollbar spans them all.
 */
import { useRef, type ReactNode } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';

/** Rows rendered without virtualisation (a small table stays plain HTML, found by find-in-page). */
export const EAGER_ROWS = 300;
const ROW_PX = 28;
const BOX_PX = 560;

/**
 * What a row spreads onto its `<tr>` when the table measures its rows (rows of different heights,
 * e.g. wrapped text): the virtualiser's measuring ref and the row's index.
 */
export interface RowMeasure {
  ref: (el: Element | null) => void;
  'data-index': number;
}

export function VirtualTable<T>({
  rows,
  head,
  row,
  columns,
  testId,
  eager = EAGER_ROWS,
  rowPx = ROW_PX,
  measure = false,
  className,
}: {
  rows: readonly T[];
  head: ReactNode;
  /** One `<tr>`; `m` is given when `measure` is set and the table is virtual: spread it onto the `<tr>`. */
  row: (r: T, index: number, m?: RowMeasure) => ReactNode;
  columns: number;
  testId: string;
  eager?: number;
  /** A row's height before it is measured (or for good, without `measure`), px. */
  rowPx?: number;
  /** Measure each rendered row (its height may differ from `rowPx`). */
  measure?: boolean;
  /** Extra classes of the `<table>`. */
  className?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const long = rows.length > eager;
  const v = useVirtualizer({ count: long ? rows.length : 0, getScrollElement: () => box.current, estimateSize: () => rowPx, overscan: measure ? 8 : 20 });
  const tableClass = className ? `data ${className}` : 'data';
  if (!long) {
    return (
      <div className="table-scroll">
        <table className={tableClass} data-testid={testId} data-rows={rows.length}>
          {head}
          <tbody>{rows.map((r, i) => row(r, i))}</tbody>
        </table>
      </div>
    );
  }
  const items = v.getVirtualItems();
  const before = items.length > 0 ? items[0]!.start : 0;
  const after = items.length > 0 ? v.getTotalSize() - items[items.length - 1]!.end : 0;
  return (
    <div className="table-scroll table-scroll--virtual" ref={box} style={{ maxHeight: BOX_PX, overflowY: 'auto' }} data-testid={`${testId}-scroll`}>
      <table className={tableClass} data-testid={testId} data-rows={rows.length} data-virtual="true">
        {head}
        <tbody>
          {before > 0 && (
            <tr aria-hidden="true" style={{ height: before }}>
              <td colSpan={columns} />
            </tr>
          )}
          {items.map((it) => row(rows[it.index]!, it.index, measure ? { ref: v.measureElement, 'data-index': it.index } : undefined))}
          {after > 0 && (
            <tr aria-hidden="true" style={{ height: after }}>
              <td colSpan={columns} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
