/**
 * The Decisions view's rows filtered and selected: pure functions over the DecisionView rows the
 * Worker made (worker/decisions.ts).
 */
import type { DecisionView } from '../../worker/decisions';
import { formatCount } from '@numascope/viz';

export interface DecisionFilter {
  policy: string | null;
  kind: string | null;
}

/** The decisions a filter keeps (the list stays sorted by window). */
export function filterDecisions(all: readonly DecisionView[], f: DecisionFilter): DecisionView[] {
  return all.filter((d) => (f.policy === null || d.policy === f.policy) && (f.kind === null || d.kind === f.kind));
}

/** Decisions about a region: those naming some of its pages (with how many), and those about every page. */
export function regionDecisions(all: readonly DecisionView[], region: number): Array<{ decision: DecisionView; pages: number | null }> {
  const out: Array<{ decision: DecisionView; pages: number | null }> = [];
  for (const d of all) {
    if (d.scope === 'all-pages') out.push({ decision: d, pages: null });
    else if (d.scope === 'pages') {
      const hit = d.regions.find((r) => r.region === region);
      if (hit) out.push({ decision: d, pages: hit.pages });
    }
  }
  return out;
}

/**
 * What selecting a decision selects in the Memory view: the region holding most of its pages and
 * a zoom onto its pages' address span (null when that is every page).
 */
export function decisionSelection(d: DecisionView, pageCount: number): { region: number | null; pages: { lo: number; hi: number } | null } {
  if (d.scope !== 'pages') return { region: null, pages: null };
  const region = d.regions[0]?.region ?? null;
  const pages = d.rankLo >= 0 && d.rankHi - d.rankLo < pageCount ? { lo: d.rankLo, hi: d.rankHi } : null;
  return { region, pages };
}

export function aboutText(d: DecisionView, threadName: (t: number) => string): string {
  if (d.scope === 'pages') {
    const regions = d.regions.length === 1 ? '1 region' : `${formatCount(d.regions.length)} regions`;
    return `${formatCount(d.pages ?? 0, 'page')} in ${regions}${d.outsideRegions > 0 ? ` (${formatCount(d.outsideRegions)} outside any region)` : ''}`;
  }
  if (d.scope === 'all-pages') return `every page (${formatCount(d.pages ?? 0, 'page')})`;
  if (d.scope === 'threads') return d.threads!.length <= 3 ? d.threads!.map(threadName).join(', ') : formatCount(d.threads!.length, 'thread');
  return 'the policy';
}
