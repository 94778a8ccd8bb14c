/**
 * One report behind every number (issue 30): what `numascope-analyze analyze --json` prints for a
 * trace and a request is the very object the app's Worker posts for the same trace and request
 * (engine analysisReport): the same keys, the same numbers, the same notes, recommendations and
 * diagnosis. Every bundled sample, with the app's default request, one re-targeted onto a preset
 * and one time range.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '@numascope/policy-engine';
import { main } from '../../../packages/policy-engine/cli/main';
import { planFromRecommendations, runAnalysis } from '../src/worker/analysis';
import { nodeBandwidthFigures } from '../src/ui/selectors/machine';
import { engineRequest } from '../src/ui/selectors/request';

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');

async function cliJson(argv: string[]): Promise<unknown> {
  let out = '';
  let err = '';
  const status = await main(argv, (s) => (out += s + '\n'), (s) => (err += s + '\n'));
  expect(status, err).toBe(0);
  return JSON.parse(out);
}

/** The Worker's report as it crosses postMessage (plain data: the JSON round trip changes nothing). */
const posted = (view: unknown) => JSON.parse(JSON.stringify(view));

describe('the CLI and the app render one report', () => {
  const names = ['streamcluster-hotspot', 'partitioned', 'two-groups', 'shared-readmostly', 'recorded-guest-hinting-4nodes', 'recorded-testload-4threads', 'recorded-alloc-sites'];
  it.each(names)('%s: analyze --json equals the Worker\'s report for the app\'s default request', async (name) => {
    const file = `${name}.numascope`;
    const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, file))));
    const app = posted(runAnalysis(trace, engineRequest(null, false), undefined, file).view);
    const cli = await cliJson(['analyze', path.join(SAMPLES, file), '--json']);
    expect(app).toEqual(cli);
  }, 60_000);

  it('re-targeted onto a preset, and a time range: still one report', async () => {
    const file = 'streamcluster-hotspot.numascope';
    const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, file))));
    const onPreset = posted(runAnalysis(trace, engineRequest('amd-genoa-2s-nps4', false), undefined, file).view);
    expect(onPreset).toEqual(await cliJson(['analyze', path.join(SAMPLES, file), '--target-machine', 'amd-genoa-2s-nps4', '--json']));
    expect(onPreset.machine.choice.used).toBe('target-machine');
    expect(onPreset.planReason).toMatch(/own machine/);
    const ranged = posted(runAnalysis(trace, engineRequest(null, false, { fromUs: 450_000, toUs: 1_020_000 }), undefined, file).view);
    expect(ranged).toEqual(await cliJson(['analyze', path.join(SAMPLES, file), '--from-ms', '450', '--to-ms', '1020', '--json']));
    expect(ranged.range.firstWindow).toBe(4);
  }, 60_000);

  it.each(names)('%s: the node cards\' sustained bandwidth is the report\'s capacity (one figure per node, one source)', (name) => {
    const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, `${name}.numascope`))));
    const view = runAnalysis(trace, engineRequest(null, false)).view;
    const cards = nodeBandwidthFigures(trace.manifest);
    expect(cards.map((c) => c.sustainedGBps! * 1e9)).toEqual(view.machine.capacityBytesPerS);
    for (const c of cards) expect(c.sustainedSource).toBe(view.machine.capacitySource);
  });

  it.each(names)('%s: one count per thing: each planable recommendation\'s pages are its plan\'s pages to move', (name) => {
    const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, `${name}.numascope`))));
    const { result, view } = runAnalysis(trace, engineRequest(null, false));
    for (const r of view.recommendations.filter((x) => x.planable)) {
      const out = planFromRecommendations(trace, result, [r.id], '2026-01-01T00:00:00Z', `${name}.numascope`);
      if (view.planReason) {
        expect(out.error ?? out.plan).toBeDefined();
        continue;
      }
      expect(out.error, r.id).toBeUndefined();
      expect(out.plan!.expected.pagesToMove, r.id).toBe(r.cost.pages);
      expect(out.plan!.expected.threadsToPin, r.id).toBe(r.cost.threads);
    }
  });
});
