/**
 * The policy decisions of the app's analysis, and one decision's pages, asked of the Worker
 * (worker/decisions.ts). Both hold the app's idle signal until their answer is on screen.
 */
import { useEffect, useRef, useState } from 'react';
import { beginWork } from '../idle';
import type { DecisionsOutcome } from '../../worker/protocol';
import { useTraceContext } from './trace-context';
import type { QueryClient } from './trace-context';
import type { AnalysisState } from './use-analysis';
import { useAnalysis } from './use-analysis';
import type { AnalysisView, AnalyzeRequest } from '../../worker/analysis';

export type WorkerValue<T> = { status: 'idle' } | { status: 'loading' } | { status: 'ready'; data: T } | { status: 'error'; message: string };

/** Calls the Worker whenever `key` changes (null = nothing to ask); the answer is kept per key. */
export function useWorkerCall<T>(key: string | null, call: (client: QueryClient, traceId: number) => Promise<T> | null): WorkerValue<T> {
  const { client, traceId } = useTraceContext();
  const [state, setState] = useState<{ key: string | null; value: WorkerValue<T> }>({ key: null, value: { status: 'idle' } });
  const finish = useRef<(() => void) | null>(null);
  const callRef = useRef(call);
  callRef.current = call;
  useEffect(() => {
    if (!key || !client) return;
    const promise = callRef.current(client, traceId);
    if (!promise) return;
    let live = true;
    const end = beginWork();
    setState({ key, value: { status: 'loading' } });
    promise.then(
      (data) => {
        if (!live) return end();
        finish.current = end;
        setState({ key, value: { status: 'ready', data } });
      },
      (e: Error) => {
        if (!live) return end();
        finish.current = end;
        setState({ key, value: { status: 'error', message: e.message } });
      },
    );
    return () => {
      live = false;
      end();
    };
  }, [key, client, traceId]);
  useEffect(() => {
    finish.current?.();
    finish.current = null;
  }, [state]);
  if (!key) return { status: 'idle' };
  if (state.key !== key) return { status: 'loading' };
  return state.value;
}

export type DecisionsState =
  | { status: 'running'; analysis: Extract<AnalysisState, { status: 'running' }> | null }
  | { status: 'done'; outcome: DecisionsOutcome; view: AnalysisView | null };

/** Runs (or reuses) the analysis with progress, then fetches every decision of it. */
export function useDecisions(request: AnalyzeRequest | null): DecisionsState {
  const analysis = useAnalysis(request);
  const ok = request !== null && analysis.status === 'done' && 'view' in analysis.outcome;
  const key = ok ? JSON.stringify(request) : null;
  const list = useWorkerCall<DecisionsOutcome>(key, (client, traceId) => (client.decisions && request ? client.decisions(traceId, request) : null));
  if (analysis.status === 'running') return { status: 'running', analysis };
  if ('error' in analysis.outcome) return { status: 'done', outcome: { error: analysis.outcome.error }, view: null };
  if (list.status === 'ready') return { status: 'done', outcome: list.data, view: analysis.outcome.view };
  if (list.status === 'error') return { status: 'done', outcome: { error: { code: 'internal', message: list.message } }, view: analysis.outcome.view };
  return { status: 'running', analysis: null };
}

/** Address-order ranks of the pages of decision `key` (empty when it names none); null while asked for. */
export function useDecisionPages(request: AnalyzeRequest | null, key: string | null): Int32Array | null {
  const k = request && key ? JSON.stringify([request, key]) : null;
  const v = useWorkerCall<Int32Array>(k, (client, traceId) => (client.decisionPages && request && key ? client.decisionPages(traceId, request, key) : null));
  return v.status === 'ready' ? v.data : null;
}
