/**
 * A TraceSummary written out by hand, for view and selector tests: two nodes, one page and two
 * samples of unknown node, three threads.
 *
 *   node  cpus  pagesSeen  residentPages  samples  faults  accesses
 *      0  0-3          6              6       18       0     1,800
 *      1  4-7          3              3        9       0       900
 *     -1     -         1              -        3       0       300
 */
import { countLabels, type TraceSummary } from '@numascope/policy-engine';
import { fixtureManifest } from '../../../e2e/fixtures/trace-fixture';

export function summaryFixture(kind: 'recorded' | 'synthetic' = 'recorded'): TraceSummary {
  const manifest = fixtureManifest(kind);
  return {
    manifest,
    labels: countLabels(manifest, 0, 0, 10),
    totals: { samples: 30, accessSamples: 30, accesses: 3000, faults: 0, faultWeight: 0, pages: 10, threads: 3, regions: 1, durationUs: 1_000_000, lostSamples: 0 },
    nodes: [
      { id: 0, cpus: [0, 1, 2, 3], memoryBytes: 8 * 1024 ** 3, pagesSeen: 6, residentPages: 6, samples: 18, accesses: 1800, faults: 0 },
      { id: 1, cpus: [4, 5, 6, 7], memoryBytes: 8 * 1024 ** 3, pagesSeen: 3, residentPages: 3, samples: 9, accesses: 900, faults: 0 },
    ],
    unknownNode: { pagesSeen: 1, samples: 3, accesses: 300, faults: 0 },
    threads: [
      { index: 0, tid: 4100, pid: 4100, name: 'main', samples: 10, accesses: 1000, faults: 0, migrations: 0, placements: { timeUs: [0], cpu: [0], node: [0] }, life: { startUs: null, exitUs: null } },
      {
        index: 1,
        tid: 4101,
        pid: 4100,
        name: 'worker-1',
        samples: 10,
        accesses: 1000,
        faults: 0,
        migrations: 1,
        placements: { timeUs: [0, 400_000], cpu: [1, 5], node: [0, 1] },
        life: { startUs: null, exitUs: null },
      },
      { index: 2, tid: 4102, pid: 4100, name: 'worker-2', samples: 10, accesses: 1000, faults: 0, migrations: -1, placements: { timeUs: [0], cpu: [6], node: [1] }, life: { startUs: null, exitUs: null } },
    ],
    residentSnapshotUs: 900_000,
  };
}
