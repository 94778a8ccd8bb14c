/**
 * What every plan builder shares (the policy replay's `buildPlan`, a diagnosed fix's
 * `planFromFix`): the trace's pages, plan ranges written from page rows with their expected nodes,
 * the running totals of pages and bytes to move and pages per node after, and the plan's envelope
 * (format, version, source, target).
 */
import { numericColumn } from '../trace/columns.js';
import type { Trace, TraceManifest } from '../trace/types.js';
import { CURRENT_PLAN_VERSION, PLAN_FORMAT_NAME, type Plan, type PlanPageRange } from './schema.js';

const hex = (x: bigint): string => `0x${x.toString(16)}`;

export class RangeWriter {
  readonly address: BigUint64Array;
  /** Node id of each page row when recorded (-1 unknown). */
  readonly current: Int8Array;
  private readonly pageSize: Uint32Array;
  readonly ranges: PlanPageRange[] = [];
  pagesToMove = 0;
  bytesToMove = 0;
  private readonly after = new Map<number, number>();

  /** `includeInPlace`: also keep ranges in which no page changes node. */
  constructor(
    trace: Trace,
    private readonly includeInPlace = false,
  ) {
    this.address = numericColumn<BigUint64Array>(trace.tables.pages, 'address');
    this.current = numericColumn<Int8Array>(trace.tables.pages, 'node');
    this.pageSize = numericColumn<Uint32Array>(trace.tables.pages, 'page_size');
    for (const n of this.current) if (n >= 0) this.after.set(n, (this.after.get(n) ?? 0) + 1);
  }

  bytesOf(p: number): bigint {
    return BigInt(this.pageSize[p]! || 4096);
  }

  /** Counts page row `p` as moving to node id `to` (nothing when it is there already). */
  moveTo(p: number, to: number): void {
    const from = this.current[p]!;
    if (from === to) return;
    if (from >= 0) this.after.set(from, this.after.get(from)! - 1);
    this.after.set(to, (this.after.get(to) ?? 0) + 1);
    this.pagesToMove++;
    this.bytesToMove += Number(this.bytesOf(p));
  }

  /**
   * One plan range over `pages` (rows consecutive in address order), page i going to node id
   * `targets[i]`; skipped when every page is there already, unless in-place ranges are kept.
   */
  push(pages: number[], targets: number[], fields: Pick<PlanPageRange, 'action' | 'toNodes' | 'weights' | 'reason'>): void {
    if (!this.includeInPlace && pages.every((p, i) => this.current[p] === targets[i])) return;
    const expected: Record<string, number> = {};
    let known = 0;
    for (const p of pages) {
      const n = this.current[p]!;
      if (n < 0) continue;
      known++;
      expected[String(n)] = (expected[String(n)] ?? 0) + 1;
    }
    pages.forEach((p, i) => this.moveTo(p, targets[i]!));
    const last = pages[pages.length - 1]!;
    const { weights, ...rest } = fields;
    this.ranges.push({
      start: hex(this.address[pages[0]!]!),
      end: hex(this.address[last]! + this.bytesOf(last)),
      action: rest.action,
      toNodes: rest.toNodes,
      ...(weights ? { weights } : {}),
      expectedNodes: known > 0 ? expected : null,
      reason: rest.reason,
    });
  }

  pagesPerNodeAfter(nodeIds: number[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const id of nodeIds) out[String(id)] = this.after.get(id) ?? 0;
    return out;
  }
}

/** The fields every plan of a recorded process starts with. */
export function planEnvelope(
  manifest: TraceManifest & { process: NonNullable<TraceManifest['process']> },
  source: Plan['source'],
  createdAt: string,
): Pick<Plan, 'format' | 'version' | 'createdAt' | 'source' | 'target'> {
  return {
    format: PLAN_FORMAT_NAME,
    version: CURRENT_PLAN_VERSION,
    createdAt,
    source,
    target: {
      pid: manifest.process.pid,
      startTimeTicks: manifest.process.startTimeTicks,
      command: manifest.process.command,
      machine: { nodeIds: manifest.machine.nodes.map((n) => n.id), distances: manifest.machine.distances },
    },
  };
}
