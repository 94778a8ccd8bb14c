/**
 * The trace Worker: opens trace files off the UI thread and keeps the open trace's columns, so
 * the views can ask for aggregates at the resolution they draw (never raw rows).
 */
import { answerQuery, transferables } from './analysis';
import type { TraceColumns } from './analysis';
import { openTraceBytes } from './parse';
import type { WorkerReply, WorkerRequest } from './parse';

let open: { traceId: number; columns: TraceColumns; bytes: Uint8Array } | null = null;
let nextTraceId = 1;

function reply(r: WorkerReply, transfer: ArrayBuffer[] = []) {
  self.postMessage(r, { transfer });
}

self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const req = event.data;
  if (req.type === 'open') {
    open = null;
    const traceId = nextTraceId++;
    const bytes = new Uint8Array(req.bytes);
    const { columns, ...result } = openTraceBytes(bytes, traceId);
    if (columns) open = { traceId, columns, bytes };
    reply({ id: req.id, type: 'open', ...result }, 'overview' in result ? transferables(result.overview.windows) : []);
    return;
  }
  if (!open || open.traceId !== req.traceId) {
    reply({ id: req.id, type: 'failed', error: { code: 'internal', message: 'That trace is no longer open.' } });
    return;
  }
  try {
    if (req.type === 'bytes') {
      const copy = open.bytes.slice().buffer;
      reply({ id: req.id, type: 'bytes', bytes: copy }, [copy]);
      return;
    }
    const answer = answerQuery(open.columns, req.query);
    reply({ id: req.id, type: 'query', answer }, transferables(answer));
  } catch (e) {
    reply({ id: req.id, type: 'failed', error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } });
  }
};
