/** Policy ids the app offers, and which of them can run on a placement-only estimate. */
export const APP_POLICIES = ['observed', 'first-touch', 'interleave', 'autonuma', 'carrefour', 'asymsched'] as const;

export const POLICY_LABELS: Record<string, string> = {
  observed: 'Observed',
  'first-touch': 'First-touch',
  interleave: 'Interleave',
  autonuma: 'AutoNUMA',
  carrefour: 'Carrefour',
  asymsched: 'AsymSched',
  manual: 'Manual',
};

export function policyLabel(id: string): string {
  return POLICY_LABELS[id] ?? id;
}

/** Mirrors the engine's ESTIMATE_POLICIES (engine/windows.ts): placement-only policies. */
export const ESTIMATE_POLICY_IDS: readonly string[] = ['observed', 'first-touch', 'interleave', 'manual'];

/** The baselines the app offers: what ran (the engine's default) or first-touch. */
export const BASELINES = ['observed', 'first-touch'] as const;
