/** Runs an analysis in the Worker for a view, holding the app's idle signal until it is shown. */
import { useEffect, useRef, useState } from 'react';
import { formatDurationUs } from '@numascope/viz';
import { beginWork } from '../idle';
import type { EngineProgress } from '../../worker/client';
import { useTraceContext } from './trace-context';
import type { AnalyzeOutcome, AnalyzeRequest } from '../../worker/analysis';

export type AnalysisState =
  | { status: 'running'; startedAt: number; label: string; progress: EngineProgress | null }
  | { status: 'done'; outcome: AnalyzeOutcome };

export function analysisLabel(req: AnalyzeRequest): string {
  const n = req.policies.length;
  const what = n === 1 ? `Replaying ${req.policies[0]}` : `Replaying ${n} policies`;
  const range = req.range ? ` over ${formatDurationUs(req.range.fromUs)} – ${formatDurationUs(req.range.toUs)}` : '';
  return `${what}${req.machine ? ` on ${req.machine}` : ''}${range}${req.estimate ? ' (placement-only estimate)' : ''}${req.accessRates === 'bandwidth-bound' ? ' (assumed bandwidth-bound)' : ''}…`;
}

export function useAnalysis(request: AnalyzeRequest | null, recording: number | null = null): AnalysisState {
  const { client, traceId } = useTraceContext();
  const key = request ? JSON.stringify([request, recording]) : null;
  const [state, setState] = useState<{ key: string | null; value: AnalysisState }>({
    key: null,
    value: { status: 'running', startedAt: Date.now(), label: '', progress: null },
  });
  const finish = useRef<(() => void) | null>(null);
  useEffect(() => {
    if (!key || !client?.analyze) return;
    const [req, rec] = JSON.parse(key) as [AnalyzeRequest, number | null];
    let live = true;
    const end = beginWork();
    const abort = new AbortController();
    const label = analysisLabel(req);
    setState({ key, value: { status: 'running', startedAt: Date.now(), label, progress: null } });
    client
      .analyze(traceId, rec, req, {
        signal: abort.signal,
        // Progress re-renders the view but is not its result: the idle signal stays held.
        onProgress: (progress) => {
          if (live) setState((s) => (s.key === key && s.value.status === 'running' ? { key, value: { ...s.value, progress } } : s));
        },
      })
      .then((outcome) => {
        if (!live) return end();
        finish.current = end;
        setState({ key, value: { status: 'done', outcome } });
      });
    return () => {
      live = false;
      abort.abort();
      end();
    };
  }, [key, client, traceId]);
  useEffect(() => {
    if (state.value.status !== 'done') return;
    finish.current?.();
    finish.current = null;
  }, [state]);
  if (!client?.analyze) return { status: 'done', outcome: { error: { code: 'internal', message: 'The policy engine runs in the app’s Worker, which is not available here.' } } };
  if (state.key !== key) return { status: 'running', startedAt: Date.now(), label: 'Replaying…', progress: null };
  return state.value;
}
