/**
 * Every policy described as data: its id, the label a person reads, whether its decisions need
 * measured access rates (so it cannot run on a placement-only estimate), whether it is replayed
 * by default, and the parameters it takes. The engine's own checks, the CLI's help and the app's
 * menus all read this table, so a policy is added here once and shows up everywhere. The code of
 * each policy is in the file named after it; policies/index.ts joins the two.
 */

/** A parameter a policy takes besides the trace. */
export interface PolicyParameter {
  name: string;
  /**
   * `nodes`: node indices written into the id (`interleave:0,2`); `weights`: node indices with
   * their weights written into the id (`weighted-interleave:0=9,1=1`); `placement`: a
   * ManualPlacement given with the id (getPolicy's `placement`, the CLI's `--manual FILE.json`);
   * `options`: KEY=VALUE pairs written into the id (`replicate:read=0.9,object=load_table`).
   */
  kind: 'nodes' | 'weights' | 'placement' | 'options';
  required: boolean;
  /** How it is written (`interleave:N,M,…`), for help texts and error messages. */
  syntax: string;
  description: string;
}

export interface PolicyDescriptor {
  id: string;
  /** The name shown to people (menus, table headings). */
  label: string;
  /**
   * True when the policy decides on measured access rates (Carrefour's MAPTU and imbalance
   * switches, AsymSched's traffic groups, AutoNUMA's fault scans): it is refused on an access
   * estimate, which has the spread of accesses over nodes but no real rates.
   */
  needsMeasuredAccesses: boolean;
  /** Replayed when no list of policies is given (analyze, the CLI, the app's views). */
  inDefaultSet: boolean;
  /**
   * Replayed by default, besides the default set, on a machine with memory of unequal kinds:
   * memory-only (cpu-less) nodes or more than one memory tier (tieredMachine in policies/index.ts).
   */
  onTieredMachines?: boolean;
  parameters: readonly PolicyParameter[];
}

export const POLICY_DESCRIPTORS = [
  { id: 'observed', label: 'Observed', needsMeasuredAccesses: false, inDefaultSet: true, parameters: [] },
  { id: 'first-touch', label: 'First-touch', needsMeasuredAccesses: false, inDefaultSet: true, parameters: [] },
  {
    id: 'interleave',
    label: 'Interleave',
    needsMeasuredAccesses: false,
    inDefaultSet: true,
    parameters: [{ name: 'nodes', kind: 'nodes', required: false, syntax: 'interleave:N,M,…', description: 'node indices to interleave over (default: all nodes)' }],
  },
  { id: 'autonuma', label: 'AutoNUMA', needsMeasuredAccesses: true, inDefaultSet: true, parameters: [] },
  { id: 'carrefour', label: 'Carrefour', needsMeasuredAccesses: true, inDefaultSet: true, parameters: [] },
  { id: 'asymsched', label: 'AsymSched', needsMeasuredAccesses: true, inDefaultSet: true, parameters: [] },
  {
    id: 'weighted-interleave',
    label: 'Weighted interleave',
    needsMeasuredAccesses: false,
    inDefaultSet: false,
    onTieredMachines: true,
    parameters: [
      {
        name: 'weights',
        kind: 'weights',
        required: false,
        syntax: 'weighted-interleave:N=W,M=W,…',
        description: 'node indices and their weights, 1–255 (default: the weights the engine recommends)',
      },
      {
        name: 'nodes',
        kind: 'nodes',
        required: false,
        syntax: 'weighted-interleave:N,M,…',
        description: 'node indices the engine recommends weights over, as numactl --weighted-interleave=N,M takes them (default: all nodes)',
      },
    ],
  },
  { id: 'tiering', label: 'Tiering', needsMeasuredAccesses: true, inDefaultSet: false, onTieredMachines: true, parameters: [] },
  {
    // Not in the default set (existing outputs stay as they were): asked for by id, and offered by
    // the app's Compare menu (ON_REQUEST_POLICY_IDS). Needs measured accesses: on an estimate
    // every thread reads every page, so everything would look read-mostly and shared.
    id: 'replicate',
    label: 'Replicate',
    needsMeasuredAccesses: true,
    inDefaultSet: false,
    parameters: [
      {
        name: 'read',
        kind: 'options',
        required: false,
        syntax: 'replicate:read=S,object=TEXT,address=0xA-0xB',
        description:
          'read=S: share of loads a unit needs over the recording, 0–1 or a percentage (default 0.95: Carrefour\'s replication gate, read ratio ≥ 95 %); ' +
          'object=TEXT: only allocation objects whose site contains TEXT; address=0xA-0xB: only pages in that address range (each optional)',
      },
    ],
  },
  {
    id: 'manual',
    label: 'Manual',
    needsMeasuredAccesses: false,
    inDefaultSet: false,
    parameters: [{ name: 'placement', kind: 'placement', required: true, syntax: 'manual', description: 'threads and page ranges to nodes (ManualPlacement; CLI: --manual FILE.json)' }],
  },
] as const satisfies readonly PolicyDescriptor[];

/** Every policy id, the parameterised ones included. */
export type PolicyId = (typeof POLICY_DESCRIPTORS)[number]['id'];
/** The ids of the default set: policies that need no parameter. */
export type DefaultPolicyId = Extract<(typeof POLICY_DESCRIPTORS)[number], { inDefaultSet: true }>['id'];

/** The default set's ids, in the order reports show them. */
export const POLICY_IDS: readonly DefaultPolicyId[] = POLICY_DESCRIPTORS.filter((d): d is Extract<(typeof POLICY_DESCRIPTORS)[number], { inDefaultSet: true }> => d.inDefaultSet).map((d) => d.id);

/** The policy speedups are measured against by default: what actually ran (docs/engine.md, "Baselines"). */
export const DEFAULT_BASELINE = 'observed' satisfies PolicyId;
/** The baseline when the trace records no page placement (nothing observed to compare against). */
export const FALLBACK_BASELINE = 'first-touch' satisfies PolicyId;
/** The baselines a front end offers: the default and its fallback. */
export const BASELINES = [DEFAULT_BASELINE, FALLBACK_BASELINE] as const;

/** The descriptor of a policy id (`interleave:0,2` is interleave's); undefined for an unknown id. */
export function describePolicy(id: string): PolicyDescriptor | undefined {
  const exact = POLICY_DESCRIPTORS.find((d) => d.id === id);
  if (exact) return exact;
  const colon = id.indexOf(':');
  if (colon < 0) return undefined;
  const d = POLICY_DESCRIPTORS.find((x) => x.id === id.slice(0, colon));
  return d && d.parameters.some((p) => p.kind === 'nodes' || p.kind === 'weights' || p.kind === 'options') ? d : undefined;
}

/** The label of a policy id; an id with parameters (`interleave:0,2`) or an unknown one is shown as it is. */
export function policyLabel(id: string): string {
  return POLICY_DESCRIPTORS.find((d) => d.id === id)?.label ?? id;
}

/** Whether a policy can run on an access estimate (it needs no measured access rates). Unknown ids cannot. */
export function runsOnEstimate(id: string): boolean {
  const d = describePolicy(id);
  return d !== undefined && !d.needsMeasuredAccesses;
}

/** Whether a policy id needs a placement passed with it (manual). */
export function needsPlacement(id: string): boolean {
  return describePolicy(id)?.parameters.some((p) => p.kind === 'placement' && p.required) ?? false;
}

/** Every way of naming a policy, for help texts and "valid policies" messages: `observed, …, interleave:N,M,…, manual`. */
export function policyForms(): string[] {
  const withNodes = POLICY_DESCRIPTORS.flatMap((d) => d.parameters.filter((p) => p.kind === 'nodes' || p.kind === 'weights' || p.kind === 'options').map((p) => p.syntax));
  const others = POLICY_DESCRIPTORS.filter((d) => !d.inDefaultSet).map((d) => d.id);
  return [...POLICY_IDS, ...withNodes, ...others];
}

/** The ids replayed by default on a tiered machine besides the default set, in order. */
export const TIERED_POLICY_IDS: readonly string[] = POLICY_DESCRIPTORS.filter((d) => 'onTieredMachines' in d && d.onTieredMachines).map((d) => d.id);

/**
 * Policies outside the default set that need no parameter and are replayed only when asked for,
 * on any machine (not the tiered ones, not manual): what-ifs such as `replicate`. The app's
 * Compare menu offers them; each such column is its own analysis (the policy and the baseline).
 */
export const ON_REQUEST_POLICY_IDS: readonly string[] = POLICY_DESCRIPTORS.filter(
  (d) => !d.inDefaultSet && !('onTieredMachines' in d && d.onTieredMachines) && !d.parameters.some((p) => p.required),
).map((d) => d.id);
