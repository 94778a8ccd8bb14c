/**
 * What the views of an open trace share: the Worker to ask, the open trace's id, and the view
 * state with a way to change it (App writes it to the URL). `useTraceQuery` asks the Worker and
 * holds the app's idle signal until the answer is on screen.
 */
import { createContext, useContext, useEffect, useRef, useState } from 'react';
import type { TraceAnswer, TraceQuery } from '@numascope/policy-engine';
import type { AnalyzeOutcome, AnalyzeRequest, PlanOutcome } from '../../worker/analysis';
import type { AnalyzeCallOptions } from '../../worker/client';
import type { CodeOutcome, CodeRequest, TouchedByOutcome } from '../../worker/code';
import type { DecisionsOutcome } from '../../worker/protocol';
import { beginWork } from '../idle';
import type { ViewState } from '../url-state';

export interface QueryClient {
  query<Q extends TraceQuery>(traceId: number, q: Q): Promise<TraceAnswer<Q>>;
  bytes(traceId: number): Promise<ArrayBuffer>;
  /** Policy engine (optional so test doubles without an engine still type-check). */
  analyze?(traceId: number, recording: number | null, request: AnalyzeRequest, options?: AnalyzeCallOptions): Promise<AnalyzeOutcome>;
  decisions?(traceId: number, request: AnalyzeRequest): Promise<DecisionsOutcome>;
  decisionPages?(traceId: number, request: AnalyzeRequest, key: string): Promise<Int32Array>;
  openExtra?(bytes: ArrayBuffer, name: string): Promise<{ recording: number; name: string }>;
  plan?(traceId: number, request: AnalyzeRequest, ids: string[], createdAt: string, traceName: string): Promise<PlanOutcome>;
  planFix?(traceId: number, fixId: string, createdAt: string, traceName: string): Promise<PlanOutcome>;
  /** Code attribution (the Code view, the Objects panel's "touched by"). */
  code?(traceId: number, request: CodeRequest): Promise<CodeOutcome>;
  touchedBy?(traceId: number, allocation: number, range: CodeRequest['range']): Promise<TouchedByOutcome>;
}

export interface TraceContextValue {
  client: QueryClient | null;
  traceId: number;
  state: ViewState;
  /** Changes the view state; `replace` = no new history entry. */
  navigate: (patch: Partial<ViewState>, options?: { replace?: boolean }) => void;
}

export const TraceContext = createContext<TraceContextValue | null>(null);

export function useTraceContext(): TraceContextValue {
  const v = useContext(TraceContext);
  if (!v) throw new Error('useTraceContext outside a TraceContext provider');
  return v;
}

export type QueryState<T> = { status: 'loading'; data: T | null } | { status: 'ready'; data: T } | { status: 'error'; data: T | null; message: string };

/**
 * Sends `query` (null = nothing to ask) whenever its JSON changes. The previous answer stays
 * shown while the next is computed.
 */
export function useTraceQuery<Q extends TraceQuery>(query: Q | null): QueryState<TraceAnswer<Q>> {
  const { client, traceId } = useTraceContext();
  const key = query ? JSON.stringify(query) : null;
  const [state, setState] = useState<{ key: string | null; result: QueryState<TraceAnswer<Q>> }>({ key: null, result: { status: 'loading', data: null } });
  const finish = useRef<(() => void) | null>(null);

  useEffect(() => {
    if (!key || !client) return;
    let live = true;
    const end = beginWork();
    client.query(traceId, JSON.parse(key) as Q).then(
      (data) => {
        if (!live) return end();
        finish.current = end;
        setState({ key, result: { status: 'ready', data } });
      },
      (e: Error) => {
        if (!live) return end();
        finish.current = end;
        setState((s) => ({ key, result: { status: 'error', data: s.result.data, message: e.message } }));
      },
    );
    return () => {
      live = false;
      end();
    };
  }, [key, client, traceId]);

  // The answer is committed: release the idle signal.
  useEffect(() => {
    finish.current?.();
    finish.current = null;
  }, [state]);

  if (state.key !== key && state.result.status !== 'loading') return { status: 'loading', data: state.result.data };
  return state.result;
}
