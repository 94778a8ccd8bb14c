/**
 * Which mappings the kernel's NUMA scanner skips: `task_numa_work()` (kernel/sched/fair.c) walks
 * the process's VMAs and never marks the pages of some of them for NUMA hinting faults, so their
 * pages are neither sampled nor migrated by automatic NUMA balancing. The rules follow Linux 6.12
 * (read in v6.12.117; file and line citations in docs/policies.md, "Mappings the scanner skips"),
 * decided from what a trace records of each mapping: kind, path, numa_maps policy, the maps
 * permissions (`regions.prot`, optional) and the kernel page size numa_maps printed.
 *
 * What the trace cannot tell is not guessed: a file-backed mapping whose permissions are unknown
 * (a trace written before `regions.prot`, a synthetic one) is scanned as the kernel scans a
 * writable one, an unread policy (`unknown`) as the default policy, and device mappings
 * (VM_IO / VM_PFNMAP / VM_MIXEDMAP, which the scanner skips) are not recognised: maps does not
 * print vm_flags.
 */
import type { Decision, ReplayRegion, ReplayRegions } from '../model/contract.js';

/** The kernel the rules follow (docs/policies.md cites its lines). */
export const NUMA_SCAN_KERNEL = 'Linux 6.12';

/** Why the scanner skips a mapping, in the order the kernel tests them (fair.c task_numa_work). */
export const NUMA_SCAN_SKIPS = ['vdso', 'hugetlb', 'policy', 'shared-ro', 'inaccessible'] as const;
export type NumaScanSkip = (typeof NUMA_SCAN_SKIPS)[number];

/** What the rules look at of one mapping (a ReplayRegion, or a hand-written case). */
export type NumaScanRegion = Pick<ReplayRegion, 'kind' | 'path' | 'policy' | 'prot'> & { kernelPageBytes?: number };

export interface NumaScanVerdict {
  /** null: the scanner walks the mapping (its pages can take hinting faults and migrate). */
  skip: NumaScanSkip | null;
  /** Why, in words; for a scanned mapping, what the trace could not tell where that mattered. */
  why: string;
  /** A file-backed mapping whose permissions are unknown: scanned as if writable. */
  protUnknown: boolean;
}

const FILE_KINDS = new Set(['file', 'shm']);
/** Page size of the kernel's base pages where the trace does not say (x86-64). */
const BASE_PAGE_BYTES = 4096;

/**
 * Whether the mapping has a vm_file: file mappings, shared memory (/dev/shm, SysV, memfd) and
 * shared anonymous memory (`[anon_shmem:…]`, `/dev/zero (deleted)`: shmem files).
 */
export function isFileBacked(r: Pick<ReplayRegion, 'kind' | 'path'>): boolean {
  return FILE_KINDS.has(r.kind) || (r.path?.startsWith('[anon_shmem:') ?? false);
}

/**
 * `vma_policy_mof()` from a numa_maps policy string (mpol_to_str: `mode[=flags][:nodes]`): true
 * when the policy migrates on fault, false when not, null when the string says nothing (`unknown`:
 * numa_maps not read; a mode this table does not know).
 *
 * In 6.12 MPOL_F_MOF is set on the built-in per-node policy a task without a policy uses (printed
 * `default`), and on bind / prefer (many) given MPOL_F_NUMA_BALANCING (printed `=balancing`, e.g.
 * `bind=balancing:0-1`); the kernel refuses that flag with any other mode. Every other policy
 * (`local`, `prefer:N`, `bind:N`, `interleave:…`, `weighted interleave:…`) lacks it: the scanner
 * skips the mapping.
 */
export function policyMigratesOnFault(policy: string): boolean | null {
  const p = policy.trim();
  if (p === 'default') return true;
  const m = /^(local|prefer \(many\)|prefer|bind|interleave|weighted interleave)(?:=([a-z|]*))?(?::.*)?$/.exec(p);
  if (!m) return null;
  const balancing = (m[2] ?? '').split('|').includes('balancing');
  return balancing && (m[1] === 'bind' || m[1] === 'prefer (many)');
}

/**
 * Whether the kernel's NUMA scanner would skip this mapping, and why. `basePageBytes` is the
 * kernel's base page size (numa_maps prints it for every ordinary mapping); a larger kernel page
 * size marks a hugetlb (or device-DAX) mapping.
 */
export function numaScanVerdict(r: NumaScanRegion, basePageBytes = BASE_PAGE_BYTES): NumaScanVerdict {
  const verdict = (skip: NumaScanSkip | null, why: string, protUnknown = false): NumaScanVerdict => ({ skip, why, protUnknown });
  if (r.kind === 'vdso') return verdict('vdso', `${r.path ?? 'vdso'}: a special mapping of the kernel (vDSO, vvar, vsyscall), never armed`);
  const kernelPage = r.kernelPageBytes ?? 0;
  if (kernelPage > basePageBytes) {
    return verdict('hugetlb', `kernel page size ${kernelPage / 1024} kB (numa_maps kernelpagesize_kB) > the base ${basePageBytes / 1024} kB: hugetlb (or device-DAX)`);
  }
  if (r.path && (r.path.startsWith('/anon_hugepage') || r.path.startsWith('/dev/hugepages/'))) {
    return verdict('hugetlb', `${r.path}: a hugetlbfs file (MAP_HUGETLB or the /dev/hugepages mount)`);
  }
  const mof = policyMigratesOnFault(r.policy);
  if (mof === false) return verdict('policy', `policy ${r.policy} does not migrate on fault (vma_policy_mof)`);
  const fileBacked = isFileBacked(r);
  const prot = r.prot;
  if (prot !== null && prot.length >= 3) {
    if (fileBacked && prot[0] === 'r' && prot[1] === '-') return verdict('shared-ro', `file-backed and read-only (${prot})`);
    if (prot.startsWith('---')) return verdict('inaccessible', `inaccessible (${prot}, PROT_NONE)`);
  }
  const unknowns: string[] = [];
  if (mof === null) unknowns.push(`policy ${r.policy} not known: scanned as the default policy`);
  const protUnknown = fileBacked && (prot === null || prot.length < 3);
  if (protUnknown) unknowns.push('file-backed with unknown permissions: scanned as a writable mapping');
  return verdict(null, unknowns.length > 0 ? unknowns.join('; ') : 'scanned', protUnknown);
}

/** What the scanner skips of a trace's pages (numaScanSkips). */
export interface NumaScanSkips {
  /** 1 for each page row the scanner never arms (its region is skipped). */
  skipped: Uint8Array;
  /** Skipped regions by reason (NUMA_SCAN_SKIPS order, reasons with pages only): region rows and page rows. */
  groups: Array<{ reason: NumaScanSkip; regions: number[]; pages: number[] }>;
  /** Page rows per region row. */
  regionPages: Int32Array;
  /** File-backed regions holding pages whose permissions are unknown (scanned as writable), and their page rows. */
  protUnknown: { regions: number[]; pages: number[] };
  /** The trace has the regions.prot column. */
  protRecorded: boolean;
}

/** The verdict for every region of `regions` and the page rows it covers. */
export function numaScanSkips(regions: ReplayRegions, pageCount: number): NumaScanSkips {
  const { list, pageRegion } = regions;
  const R = list.length;
  let base = 0;
  for (const r of list) if (r.kernelPageBytes > 0 && (base === 0 || r.kernelPageBytes < base)) base = r.kernelPageBytes;
  const verdicts = list.map((r) => numaScanVerdict(r, base || BASE_PAGE_BYTES));
  const regionPages = new Int32Array(R);
  const skipped = new Uint8Array(pageCount);
  const byReason = new Map<NumaScanSkip, { regions: Set<number>; pages: number[] }>();
  const unknownRegions = new Set<number>();
  const unknownPages: number[] = [];
  const n = Math.min(pageCount, pageRegion.length);
  for (let p = 0; p < n; p++) {
    const r = pageRegion[p]!;
    if (r < 0 || r >= R) continue;
    regionPages[r]!++;
    const v = verdicts[r]!;
    if (v.protUnknown) {
      unknownRegions.add(r);
      unknownPages.push(p);
    }
    const skip = v.skip;
    if (skip === null) continue;
    skipped[p] = 1;
    let g = byReason.get(skip);
    if (!g) byReason.set(skip, (g = { regions: new Set(), pages: [] }));
    g.regions.add(r);
    g.pages.push(p);
  }
  const groups = NUMA_SCAN_SKIPS.filter((s) => byReason.has(s)).map((reason) => {
    const g = byReason.get(reason)!;
    return { reason, regions: [...g.regions].sort((a, b) => regionPages[b]! - regionPages[a]! || a - b), pages: g.pages };
  });
  const byPages = (a: number, b: number) => regionPages[b]! - regionPages[a]! || a - b;
  const protUnknown = { regions: [...unknownRegions].sort(byPages), pages: unknownPages };
  return { skipped, groups, regionPages, protUnknown, protRecorded: regions.protRecorded };
}

const REASON_WORDS: Record<NumaScanSkip, string> = {
  vdso: 'the kernel\'s special mappings (vvar is VM_IO|VM_PFNMAP, the vsyscall page is no VMA of the process, vDSO pages are shared by every process)',
  hugetlb: 'hugetlb mappings (is_vm_hugetlb_page)',
  policy: 'memory policy without migrate-on-fault (vma_policy_mof: only the default policy, and bind or prefer (many) with MPOL_F_NUMA_BALANCING, migrate on fault)',
  'shared-ro': 'read-only file-backed mappings (the kernel expects shared library and other read-only file pages to be cache-replicated)',
  inaccessible: 'inaccessible mappings (PROT_NONE)',
};

const LISTED = 4;

function regionLabel(r: ReplayRegion, reason: NumaScanSkip | null): string {
  const name = r.path ?? `${r.kind} 0x${r.start.toString(16)}`;
  const detail =
    reason === 'policy' ? r.policy : reason === 'hugetlb' && r.kernelPageBytes > 0 ? `${r.kernelPageBytes / 1024} kB pages` : r.prot;
  return detail ? `${name} ${detail}` : name;
}

function listRegions(regions: ReplayRegions, rows: number[], pages: Int32Array, reason: NumaScanSkip | null): string {
  const shown = rows.slice(0, LISTED).map((r) => `${regionLabel(regions.list[r]!, reason)} (${pages[r]} pages)`);
  const more = rows.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The scanner's skips as decisions of kind `none` at `window`: one per reason (how many pages of
 * which regions, and why), and one note when file-backed regions could not be told read-only.
 */
export function numaScanSkipDecisions(regions: ReplayRegions, skips: NumaScanSkips, window: number): Decision[] {
  const out: Decision[] = [];
  for (const g of skips.groups) {
    out.push({
      window,
      kind: 'none',
      explanation:
        `${plural(g.pages.length, 'page')} of ${plural(g.regions.length, 'region')} never armed for NUMA hinting faults, so never migrated ` +
        `(task_numa_work skips them, ${NUMA_SCAN_KERNEL}): ${REASON_WORDS[g.reason]}: ${listRegions(regions, g.regions, skips.regionPages, g.reason)}`,
      pages: g.pages.length,
      pageIndices: Int32Array.from(g.pages),
    });
  }
  const u = skips.protUnknown;
  if (u.regions.length > 0) {
    const cause = skips.protRecorded
      ? 'their regions.prot is unknown'
      : 'the trace has no regions.prot column (written before it existed, or synthetic)';
    out.push({
      window,
      kind: 'none',
      explanation:
        `${plural(u.regions.length, 'file-backed region')} (${plural(u.pages.length, 'page')}) cannot be told read-only: ${cause}; ` +
        `scanned as writable mappings, though the kernel's scanner skips read-only file mappings (${NUMA_SCAN_KERNEL}): ${listRegions(regions, u.regions, skips.regionPages, null)}`,
      pages: u.pages.length,
      pageIndices: Int32Array.from(u.pages),
    });
  }
  return out;
}
