/**
 * Preset provenance strings are user-visible (the app's machine panel, `numascope-analyze presets
 * --json`, trace manifests, docs/fidelity.md). They must cite the original sources (papers, vendor
 * documents, articles, public repositories and issues), never notes outside the repository that a
 * user cannot open.
 */
import { describe, expect, it } from 'vitest';
import { listPresets, type MachinePreset } from '../src/machine/presets.js';

/** Citations of notes outside the repository. */
const INTERNAL_CITATION = /reference §|shared\/|reference\/|published-measurements/i;

/** Every provenance string of a preset, labelled with where it sits. */
function provenanceStrings(preset: MachinePreset): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [field, text] of Object.entries(preset.machine.provenance)) out.push([`machine.provenance.${field}`, text]);
  preset.figures.forEach((f, i) => out.push([`figures[${i}] ${f.quantity} (${f.kind}, ${f.unit})`, f.provenance]));
  if (preset.coherence) out.push(['coherence', preset.coherence.provenance]);
  if (preset.outstandingMissesPerCore) out.push(['outstandingMissesPerCore', preset.outstandingMissesPerCore.provenance]);
  out.push(['description', preset.description]);
  return out;
}

describe('preset provenance cites original sources, not internal notes', () => {
  it('the check recognises each form of internal citation', () => {
    for (const bad of [
      'estimated:typical 110 ns (reference §5.4)',
      'documented:shared/reference/published-measurements.md §1: 64 GB',
      'documented:../shared/reference/policies-and-machines.md',
      'measured:published-measurements.md §3: near 55,000 MB/s',
      'estimated:see reference/platform.md',
    ]) {
      expect(bad).toMatch(INTERNAL_CITATION);
    }
    expect('documented:Bergstrom, "Measuring NUMA effects with the STREAM benchmark", 2011').not.toMatch(INTERNAL_CITATION);
    expect('documented:numactl on an SPR 8468V box (bsc-mem/Mess-benchmark#2)').not.toMatch(INTERNAL_CITATION);
  });

  for (const preset of listPresets()) {
    it(`${preset.id}: no provenance string cites an internal note`, () => {
      const strings = provenanceStrings(preset);
      // Every machine provenance field and every figure is checked.
      expect(strings.length).toBeGreaterThanOrEqual(Object.keys(preset.machine.provenance).length + preset.figures.length);
      const offending = strings.filter(([, text]) => INTERNAL_CITATION.test(text)).map(([where, text]) => `${where}: ${text}`);
      expect(offending).toEqual([]);
    });
  }

  it('the published machines cite their papers by authors, venue and year', () => {
    const byId = new Map(listPresets().map((p) => [p.id, p]));
    const all = (id: string) => provenanceStrings(byId.get(id)!).map(([, text]) => text).join('\n');
    expect(all('amd-opteron-8385-4p')).toContain('Gaud et al., "Challenges of Memory Management on Modern NUMA Systems", CACM 2015');
    expect(all('amd-asymsched-machine-a')).toContain('Lepers, Quéma, Fedorova, "Thread and Memory Placement on NUMA Systems: Asymmetry Matters", USENIX ATC 2015');
    for (const id of ['amd-opteron-6172-4p', 'intel-xeon-x7560-4s']) {
      expect(all(id), id).toContain('Bergstrom, "Measuring NUMA effects with the STREAM benchmark", 2011, University of Chicago TR-2012-04');
    }
    expect(all('cxl-expander')).toMatch(/weighted-interleave patch series .*Gregory Price et al\., v5 cover letter, 2024/);
  });
});
