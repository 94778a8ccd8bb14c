/** Runs an analysis in the Worker for a view, holding the app's idle signal until it is shown. */
import { useEffect, useRef, useState } from 'react';
import { beginWork } from '../idle';
import { useTraceContext } from '../trace-context';
import { APP_POLICIES } from './policies';
import type { AnalyzeOutcome, AnalyzeRequest } from './run';

export const WINDOW_MS = 100;

export type AnalysisState = { status: 'running'; startedAt: number; label: string } | { status: 'done'; outcome: AnalyzeOutcome };

/** Every view asks for the same policy set, so one Worker analysis (cached) serves them all. */
export function engineRequest(machine: string | null, estimate: boolean): AnalyzeRequest {
  return { policies: [...APP_POLICIES], machine, estimate, windowMs: WINDOW_MS };
}

export function useAnalysis(request: AnalyzeRequest | null, recording: number | null = null): AnalysisState {
  const { client, traceId } = useTraceContext();
  const key = request ? JSON.stringify([request, recording]) : null;
  const [state, setState] = useState<{ key: string | null; value: AnalysisState }>({ key: null, value: { status: 'running', startedAt: Date.now(), label: '' } });
  const finish = useRef<(() => void) | null>(null);
  useEffect(() => {
    if (!key || !client?.analyze) return;
    const [req, rec] = JSON.parse(key) as [AnalyzeRequest, number | null];
    let live = true;
    const end = beginWork();
    const label = `Replaying ${req.policies.length} policies${req.machine ? ` on ${req.machine}` : ''}${req.estimate ? ' (placement-only estimate)' : ''}…`;
    setState({ key, value: { status: 'running', startedAt: Date.now(), label } });
    client.analyze(traceId, rec, req).then((outcome) => {
      if (!live) return end();
      finish.current = end;
      setState({ key, value: { status: 'done', outcome } });
    });
    return () => {
      live = false;
      end();
    };
  }, [key, client, traceId]);
  useEffect(() => {
    finish.current?.();
    finish.current = null;
  }, [state]);
  if (!client?.analyze) return { status: 'done', outcome: { error: { code: 'internal', message: 'The policy engine runs in the app’s Worker, which is not available here.' } } };
  if (state.key !== key) return { status: 'running', startedAt: Date.now(), label: 'Replaying…' };
  return state.value;
}
