/**
 * One list of advice (issue 30): the report's actions are the recommendations and the diagnosed
 * fixes together, ranked by their own predicted gain, unpredicted fixes last with why; nothing
 * predicted to make things worse.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '@numascope/policy-engine';
import { runAnalysis } from '../src/worker/analysis';
import { engineRequest } from '../src/ui/selectors/request';

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');

describe('one ranked list of actions', () => {
  it.each(['streamcluster-hotspot', 'shared-readmostly', 'two-groups'])('%s', (name) => {
    const trace = readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, `${name}.numascope`))));
    const a = runAnalysis(trace, engineRequest(null, false)).view;
    expect(a.diagnosis).not.toBeNull();
    const fixes = a.diagnosis!.issues.filter((i) => i.fix.predictedSpeedup === null || i.fix.predictedSpeedup >= 1);
    expect(a.actions.filter((x) => x.from === 'recommendation').map((x) => x.id)).toEqual(a.recommendations.map((r) => r.id));
    expect(a.actions.filter((x) => x.from === 'diagnosis').map((x) => x.id).sort()).toEqual(fixes.map((i) => i.fix.id).sort());
    const predicted = a.actions.filter((x) => x.speedup !== null).map((x) => x.speedup!);
    expect(predicted).toEqual([...predicted].sort((p, q) => q - p));
    // unpredicted ones after every predicted one, with the reason
    const firstNull = a.actions.findIndex((x) => x.speedup === null);
    if (firstNull >= 0) {
      expect(a.actions.slice(firstNull).every((x) => x.speedup === null && x.noPrediction)).toBe(true);
    }
    for (const x of a.actions) if (x.speedup !== null) expect(x.speedup).toBeGreaterThanOrEqual(1);
  });
});
