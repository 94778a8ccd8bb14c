/**
 * Diagnostics after NumaPerf (engine diagnose): issues ranked by score over threshold, each with
 * its allocation site and stack, the code behind its object (the functions that first-touched it
 * and those that access it, each a link to the Code view filtered on the object), its fix and the
 * fix's predicted gain; and the short diagnosis
 * summary the overview shows first. Both read one baseline-only analysis (the Worker computes the
 * diagnosis with it: run.ts), so they share its cache.
 */
import { useState } from 'react';
import { formatScore } from '@numascope/viz';
import type { DiagnosisJson, IssueCode, Plan } from '@numascope/policy-engine';
import { codeSiteText, formatSpeedup, policyLabel } from '@numascope/policy-engine';
import { useTraceContext } from '../hooks/trace-context';
import type { TraceContextValue } from '../hooks/trace-context';
import { useAnalysis } from '../hooks/use-analysis';
import { ActionList } from './ActionList';
import { EngineRefusal, Progress } from './EngineParts';
import { PlanApplyNote, PlanPreview, useLiveConnected } from './RecommendView';
import { actionsRequest, engineRequest } from '../selectors/request';
import { planName } from '../selectors/policy';

type IssueJson = DiagnosisJson['issues'][number];

/**
 * The analysis the diagnosis comes with: the baseline only (each fix's gain is against it: observed,
 * or first-touch when nothing was observed, so both are asked for), whole recording, own machine.
 */
function diagnosisRequest(estimate: boolean, base: string | null) {
  return { ...engineRequest(null, estimate, null, base), policies: base ? [base] : ['observed', 'first-touch'] };
}

const KIND_LABEL: Record<IssueJson['kind'], string> = {
  'remote-access': 'Remote access',
  'page-sharing': 'Page sharing',
  'false-sharing': 'False sharing',
  'true-sharing': 'True sharing',
  'thread-migration': 'Thread migration',
  'thread-imbalance': 'Thread imbalance',
};

function gainText(i: IssueJson, baseline: string): string {
  return i.fix.predictedSpeedup !== null ? `${formatSpeedup(i.fix.predictedSpeedup)} vs ${policyLabel(baseline)}` : `no prediction: ${i.fix.noPrediction ?? ''}`;
}

/** Where an issue's evidence is: the region in the Memory view, or the thread in the Threads view. */
function evidence(i: IssueJson, navigate: TraceContextValue['navigate']): { label: string; go: () => void } | null {
  if (i.object && i.object.region >= 0) return { label: `region ${i.object.region} in Memory`, go: () => navigate({ view: 'memory', region: i.object!.region }) };
  if (i.threads.length > 0) return { label: `thread ${i.threads[0]} in Threads`, go: () => navigate({ view: 'threads', thread: i.threads[0]! }) };
  return null;
}

/**
 * The code behind an issue's object (engine diagnose/code-sites.ts): the functions that first-touched
 * its pages (node, thread) and those that access it (remote share), or why the trace has none. Each
 * function opens the Code view on that object (its allocation site: `cobj`) and that function
 * (`cfn`), first touches only for a first-touch site; a region without an allocation has no object
 * filter, so its functions are text.
 */
export function IssueCodeSites({ code }: { code: IssueCode }) {
  const { navigate } = useTraceContext();
  if (!code.available || code.firstTouch.length + code.accessors.length === 0) {
    return (
      <div className="ns-muted small" data-testid="issue-code-unavailable">
        code: {code.available ? code.reason : `not available: ${code.reason ?? 'no call stacks'}`}
      </div>
    );
  }
  const fn = (f: { function: string; fileLine: string | null }, firstTouch: boolean) =>
    code.object === null ? (
      <span data-testid="issue-code-fn">{codeSiteText(f)}</span>
    ) : (
      <button
        type="button"
        className="link-button small"
        data-testid="issue-code-fn"
        title={`${f.function} in the Code view, on ${code.object}${firstTouch ? ', first touches only' : ''}`}
        onClick={() => navigate({ view: 'code', codeObject: code.object, codeFn: f.function, codeOp: firstTouch ? 'fault' : null, codeBy: null, codeLoc: null, codeNode: null, codeThread: null })}
      >
        {codeSiteText(f)}
      </button>
    );
  const pct = (x: number | null) => (x === null ? 'locality unknown' : `${(x * 100).toFixed(0)}% remote`);
  return (
    <ul className="small issue-code" data-testid="issue-code">
      {code.firstTouch.map((f) => (
        <li key={`ft:${f.module ?? ''}:${f.function}`} data-testid="issue-first-touch" data-function={f.function} data-node={f.node} data-thread={f.thread}>
          first touched by {fn(f, true)}
          {f.node >= 0 ? ` on node ${f.node}` : ''}
          {f.thread >= 0 ? ` by thread ${f.thread} (tid ${f.tid})${f.threads > 1 ? ` and ${f.threads - 1} other thread${f.threads === 2 ? '' : 's'}` : ''}` : ''}
          <span className="ns-muted">
            {' '}
            ({f.firstTouches} first touches est., {f.pagesSampled} pages sampled)
          </span>
        </li>
      ))}
      {code.accessors.map((a) => (
        <li key={`acc:${a.module ?? ''}:${a.function}`} data-testid="issue-accessor" data-function={a.function} data-remote={a.remote}>
          {a.remote > 0 ? 'accessed remotely by' : 'accessed by'} {fn(a, false)}
          <span className="ns-muted">
            {' '}
            ({a.accesses} accesses, {pct(a.remoteShare)})
          </span>
        </li>
      ))}
    </ul>
  );
}

type FixPlan = { fixId: string; plan: Plan; json: string } | { fixId: string; error: string };

export function DiagnosticsView({ source = 'trace.numascope' }: { source?: string }) {
  const { state, navigate, client, traceId } = useTraceContext();
  const analysis = useAnalysis(diagnosisRequest(state.estimate, state.base));
  const [preview, setPreview] = useState<FixPlan | null>(null);
  const connected = useLiveConnected();
  if (analysis.status === 'running') return <Progress state={analysis} />;
  if ('error' in analysis.outcome) return <EngineRefusal error={analysis.outcome.error} onEstimate={() => navigate({ estimate: true })} />;
  const a = analysis.outcome.view;
  const d = a.diagnosis;
  const traceName = source.split('/').pop() ?? source;

  /** The fix's plan, from the engine's planFromFix in the Worker; the preview and Apply are the Recommendations view's. */
  async function previewPlan(fixId: string) {
    if (!client?.planFix) return;
    const out = await client.planFix(traceId, fixId, new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), traceName);
    setPreview(out.plan && out.json ? { fixId, plan: out.plan, json: out.json } : { fixId, error: out.error ?? 'unknown error' });
  }

  function download(json: string, fixId: string) {
    const blob = new Blob([json], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const link = document.createElement('a');
    link.href = url;
    link.download = planName(source).replace(/\.plan\.json$/, `.${fixId.replace(/[^A-Za-z0-9-]+/g, '_')}.plan.json`);
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  return (
    <section className="panel engine-view" data-testid="diagnose-view">
      <h2>Diagnostics</h2>
      <p className="ns-muted small">
        NumaPerf&apos;s issue classes and thresholds: remote accesses per object per ms (&gt; {d?.thresholds.remoteAccessPerMs ?? 1500}), cache-line
        invalidations per ms per thread (&gt; {d?.thresholds.cacheLineSharing ?? 1}), node changes per thread per second (&gt;{' '}
        {d?.thresholds.migrationsPerSecond ?? 150}), accesses per thread between thread groups (≥ {d?.thresholds.imbalanceRatio ?? 2}×). Ranked by score over
        threshold; each fix&apos;s gain is that fix alone replayed against {policyLabel(a.baseline)}. Recommendations &amp; plan ranks these fixes and
        the recommendations in one list, the list below.
      </p>
      {!d && <p className="notice" data-testid="diagnosis-note">{a.diagnosisNote}</p>}
      <ActionList where="diagnose" />
      {d && !d.cacheLine.available && (
        <p className="notice" data-testid="cache-line-unavailable">
          False and true sharing: unavailable: {d.cacheLine.reason}.
        </p>
      )}
      {d && d.issues.length === 0 && (
        <p className="ns-muted" data-testid="no-issues">
          No issue above its threshold.
        </p>
      )}
      {d && d.issues.length > 0 && (
        <table className="recs-table" data-testid="issues">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">issue</th>
              <th scope="col">score (threshold)</th>
              <th scope="col">site</th>
              <th scope="col">fix</th>
              <th scope="col">predicted gain</th>
            </tr>
          </thead>
          <tbody>
            {d.issues.map((i) => {
              const ev = evidence(i, navigate);
              return (
                <tr key={i.id} data-testid="issue" data-kind={i.kind} data-score={i.score} data-fix={i.fix.kind} data-speedup={i.fix.predictedSpeedup ?? ''}>
                  <td>{i.rank}</td>
                  <td>
                    <strong>{KIND_LABEL[i.kind]}</strong>
                    <div className="small">{i.text}</div>
                    {i.code && <IssueCodeSites code={i.code} />}
                    {ev && (
                      <button type="button" className="link-button small" onClick={ev.go}>
                        evidence: {ev.label}
                      </button>
                    )}
                  </td>
                  <td data-value={i.score}>
                    {formatScore(i.score)} <span className="ns-muted small">{i.scoreUnit} (&gt; {formatScore(i.threshold)})</span>
                  </td>
                  <td>
                    {i.site ?? '–'}
                    {i.stack.length > 1 && <div className="ns-muted small">{i.stack.join(' ← ')}</div>}
                  </td>
                  <td data-fix-id={i.fix.id}>
                    {i.fix.text}
                    {i.fix.planable && a.planReason === null ? (
                      <div>
                        <button type="button" className="small" data-testid="preview-fix-plan" onClick={() => void previewPlan(i.fix.id)}>
                          Preview plan
                        </button>
                      </div>
                    ) : (
                      <div className="ns-muted small" data-testid="fix-no-plan">
                        {i.fix.planable ? `no plan here: ${a.planReason}` : `no plan: ${i.fix.noPlan ?? 'a code change'}`}
                      </div>
                    )}
                  </td>
                  <td data-value={i.fix.predictedSpeedup ?? ''}>{gainText(i, a.baseline)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {preview && (
        <div data-testid="fix-plan" data-fix-id={preview.fixId}>
          <h3>
            Plan of fix <code>{preview.fixId}</code>
          </h3>
          {'error' in preview ? (
            <p className="notice notice--error" role="alert" data-testid="plan-error">
              {preview.error}
            </p>
          ) : (
            <>
              <p className="ns-muted small" data-testid="fix-plan-summary">
                {preview.plan.source.summary}
              </p>
              <PlanPreview plan={preview.plan} onExport={() => download(preview.json, preview.fixId)} />
            </>
          )}
          <PlanApplyNote synthetic={a.synthetic} connected={connected} plan={'json' in preview ? preview : null} name={`${traceName} fix ${preview.fixId}`} />
        </div>
      )}
    </section>
  );
}

/** The overview's first lines: the few findings that matter, in words with numbers, each linking to its evidence. */
export function DiagnosisSummary({ limit = 3 }: { limit?: number }) {
  const { state, navigate } = useTraceContext();
  // Over the whole recording, the ranked actions' analysis (every policy) also holds the diagnosis:
  // one replay on open, not two. With a time range that analysis is not diagnosed (diagnostics
  // cover the whole recording), so the findings come from the baseline-only request.
  const analysis = useAnalysis(state.range ? diagnosisRequest(state.estimate, state.base) : actionsRequest(state));
  if (analysis.status === 'running') return <p className="ns-muted small" data-testid="diagnosis-summary-running">Diagnosing…</p>;
  if ('error' in analysis.outcome) return null;
  const a = analysis.outcome.view;
  const d = a.diagnosis;
  // Not diagnosed (no access samples, a time range, a re-target): the ranked actions all the same.
  if (!d) {
    return (
      <section className="panel" data-testid="diagnosis-summary" aria-label="Actions">
        <ActionList limit={3} where="overview" />
      </section>
    );
  }
  const top = d.issues.slice(0, limit);
  return (
    <section className="panel" data-testid="diagnosis-summary" aria-label="Diagnosis">
      <h2>Diagnosis</h2>
      {top.length === 0 ? (
        <p>No NUMA issue above NumaPerf&apos;s thresholds in this recording.</p>
      ) : (
        <ul>
          {top.map((i) => {
            const ev = evidence(i, navigate);
            return (
              <li key={i.id} data-testid="diagnosis-finding" data-kind={i.kind}>
                <strong>{KIND_LABEL[i.kind]}</strong>: {i.text}. Fix: {i.fix.text} ({gainText(i, a.baseline)}).{' '}
                {ev && (
                  <button type="button" className="link-button" onClick={ev.go}>
                    {ev.label}
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      <button type="button" className="link-button" data-testid="diagnosis-all" onClick={() => navigate({ view: 'diagnose' })}>
        All {d.issues.length} issue{d.issues.length === 1 ? '' : 's'} in Diagnostics
      </button>{' '}
      <ActionList limit={3} where="overview" />
    </section>
  );
}
