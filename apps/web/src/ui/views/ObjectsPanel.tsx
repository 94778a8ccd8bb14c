import { useEffect, useRef } from 'react';
import { formatBytes, formatCount, formatDurationUs } from '@numascope/viz';
import type { ObjectRow, StackFrameView, TraceSummary } from '@numascope/policy-engine';
import type { TouchedByOutcome } from '../../worker/code';
import { useTraceContext, useTraceQuery } from '../hooks/trace-context';
import { useWorkerCall } from '../hooks/use-decisions';
import { CodeUnavailable } from './CodeView';

/** Objects listed at most in a region's detail. */
export const MAX_OBJECT_ROWS = 50;

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i >= 0 ? path.slice(i + 1) : path;
}

/** One frame as `function  file:line:col  (module+0xoffset)`, with inlined frames marked. */
function FrameLine({ frame }: { frame: StackFrameView }) {
  const where = frame.file ? `${baseName(frame.file)}${frame.line >= 0 ? `:${frame.line}${frame.col >= 0 ? `:${frame.col}` : ''}` : ''}` : null;
  const module = `${frame.module ? baseName(frame.module) : '?'}+0x${frame.moduleOffset.toString(16)}`;
  return (
    <li className={frame.inlined ? 'frame inlined' : 'frame'} data-testid="object-frame" title={frame.module ?? undefined}>
      <code>{frame.function ?? '??'}</code>
      {where && <span className="frame-file"> {where}</span>}
      {frame.inlined && <span className="ns-muted small"> (inlined)</span>}
      <span className="ns-muted small"> {module}</span>
    </li>
  );
}

/**
 * The allocations (objects) of a region: which line allocated its memory, how many of its pages
 * and samples each holds (objects.ts attributes them by address and time), and the selected
 * one's call stack and the functions that touched it (the Code view's attribution). The selected
 * object is in the link (`obj=`: the Code view's links open it). Says why when the trace has no
 * allocation sites (capability `allocation-sites`).
 */
export function RegionObjects({ summary, region }: { summary: TraceSummary; region: number }) {
  const { state, navigate } = useTraceContext();
  const answer = useTraceQuery({ kind: 'objects', region, range: state.range, limit: MAX_OBJECT_ROWS });
  const picked = state.obj;
  const scrolled = useRef<number | null>(null);
  // Opened on an object (a link from the Code view): bring it into view once.
  useEffect(() => {
    if (picked === null || scrolled.current === picked || !answer.data?.rows.some((r) => r.allocation === picked)) return;
    scrolled.current = picked;
    document.querySelector(`[data-testid="object-row"][data-allocation="${picked}"]`)?.scrollIntoView?.({ block: 'center' });
  }, [picked, answer.data]);
  const t = answer.data;
  const threads = summary.threads;
  const capability = summary.manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites');

  let body;
  if (!t) body = <p className="ns-muted">{answer.status === 'error' ? answer.message : 'Attributing pages to allocations…'}</p>;
  else if (!t.hasAllocations) {
    body = (
      <p className="ns-muted" data-testid="region-objects-none">
        No allocation sites in this trace
        {capability ? `: ${capability.reason}` : ' (it was recorded without them)'}. Pages and samples are attributed to the region only.
      </p>
    );
  } else if (t.rows.length === 0) {
    body = (
      <p className="ns-muted" data-testid="region-objects-none">
        No recorded allocation holds this region’s memory ({formatCount(t.unattributed.pages, 'page')} seen here). The recorder keeps every allocation of at
        least 64 KiB and a byte-sampled share of smaller ones.
      </p>
    );
  } else {
    const selected = t.rows.find((r) => r.allocation === picked) ?? t.rows[0]!;
    body = (
      <>
        {picked !== null && selected.allocation !== picked && (
          <p className="notice" data-testid="object-missing">
            Allocation #{picked} is not among this region’s {formatCount(t.rows.length, 'busiest allocation')}{state.range ? ' in the selected range' : ''}.
          </p>
        )}
        <div className="table-scroll">
          <table className="data" data-testid="region-objects" data-value={t.total}>
            <thead>
              <tr>
                <th scope="col" className="text">site</th>
                <th scope="col" className="text">call</th>
                <th scope="col">size</th>
                <th scope="col">address</th>
                <th scope="col">pages</th>
                <th scope="col">samples</th>
                <th scope="col">accesses</th>
                <th scope="col" className="text">lifetime</th>
                <th scope="col" className="text">thread</th>
              </tr>
            </thead>
            <tbody>
              {t.rows.map((r) => (
                <ObjectTableRow key={r.allocation} row={r} selected={r === selected} onSelect={() => navigate({ obj: r.allocation })} threadName={threadLabel(threads, r.thread)} />
              ))}
            </tbody>
          </table>
        </div>
        {t.total > t.rows.length && <p className="ns-muted small">and {formatCount(t.total - t.rows.length, 'more allocation')} with fewer samples</p>}
        {(t.unattributed.pages > 0 || t.unattributed.samples > 0) && (
          <p className="ns-muted hint" data-testid="region-objects-unattributed">
            Not held by a recorded allocation: {formatCount(t.unattributed.pages, 'page')}, {formatCount(t.unattributed.samples, 'sample')} (the region only).
          </p>
        )}
        <h4>
          Call stack of the {selected.sampled ? 'sampled ' : ''}
          {selected.op} of {formatBytes(selected.size)} at {selected.site ?? 'an unknown site'}
        </h4>
        {selected.stack.length === 0 ? (
          <p className="ns-muted">No stack was recorded for it.</p>
        ) : (
          <ol className="stack" data-testid="object-stack" data-allocation={selected.allocation}>
            {selected.stack.map((f, i) => (
              <FrameLine key={i} frame={f} />
            ))}
          </ol>
        )}
        <p className="ns-muted hint">
          Innermost call first. Module + offset is the address in the module’s file: it finds the same code in another run of the same build.
        </p>
        <TouchedBy allocation={selected.allocation} />
      </>
    );
  }
  return (
    <>
      <h3>Objects: allocations holding this region’s memory</h3>
      <p className="ns-muted hint">
        A page belongs to the allocation live at its first touch that covers most of it; a sample to the allocation that held its exact address at that time
        ({state.range ? 'samples in the selected range' : 'whole trace'}).
      </p>
      {body}
    </>
  );
}

function threadLabel(threads: TraceSummary['threads'], row: number): string {
  const t = row >= 0 ? threads[row] : undefined;
  return t ? `${t.name || '(unnamed)'} · tid ${t.tid}` : 'unknown';
}

function ObjectTableRow({ row: r, selected, onSelect, threadName }: { row: ObjectRow; selected: boolean; onSelect: () => void; threadName: string }) {
  return (
    <tr data-testid="object-row" data-allocation={r.allocation} className={selected ? 'selected' : undefined} aria-selected={selected}>
      <th scope="row" className="text">
        <button type="button" className="link-button" onClick={onSelect} aria-pressed={selected} data-testid="object-select">
          {r.site ?? 'unknown site'}
        </button>
      </th>
      <td className="text">
        {r.op}
        {r.sampled && <span className="ns-muted small" title={`sampled: stands for ${formatBytes(r.weightBytes)}`}> (sampled)</span>}
      </td>
      <td data-value={r.size}>{formatBytes(r.size)}</td>
      <td>
        <code>0x{r.address.toString(16)}</code>
      </td>
      <td data-testid="object-pages" data-value={r.pages}>
        {formatCount(r.pages)}
      </td>
      <td data-testid="object-samples" data-value={r.samples}>
        {formatCount(r.samples)}
      </td>
      <td data-value={r.accesses}>{formatCount(r.accesses)}</td>
      <td className="text">
        {formatDurationUs(r.timeUs)} – {r.endUs >= 0 ? formatDurationUs(r.endUs) : 'end'}
      </td>
      <td className="text">{threadName}</td>
    </tr>
  );
}

/**
 * The functions whose samples fell in this object (its allocation site's allocations), busiest
 * first, at most 10, each linking to the Code view filtered to the object (engine code
 * attribution in the Worker, the same numbers the Code view shows).
 */
function TouchedBy({ allocation }: { allocation: number }) {
  const { state, navigate } = useTraceContext();
  const range = state.range ? { fromUs: state.range.fromUs, toUs: state.range.toUs } : null;
  const key = JSON.stringify([allocation, range]);
  const v = useWorkerCall<TouchedByOutcome>(key, (client, traceId) => (client.touchedBy ? client.touchedBy(traceId, allocation, range) : null));
  let body;
  if (v.status === 'idle') body = null;
  else if (v.status === 'loading') body = <p className="ns-muted">Attributing its samples to code…</p>;
  else if (v.status === 'error') body = <p className="notice notice--error">{v.message}</p>;
  else if (!v.data.available) body = <CodeUnavailable reason={v.data.reason} testId="object-touched-by-none" />;
  else if (!v.data.table || v.data.table.rows.length === 0) {
    body = (
      <p className="ns-muted" data-testid="object-touched-by-none">
        No sample with a call stack fell in this object{state.range ? ' in the selected range' : ''}.
      </p>
    );
  } else {
    const object = v.data.object!;
    const table = v.data.table;
    body = (
      <>
        <ol className="touched-by" data-testid="object-touched-by" data-object={object}>
          {table.rows.map((r) => (
            <li key={`${r.module ?? ''}\u0000${r.function}`} data-testid="object-touched-by-fn" data-function={r.function} data-accesses={r.accesses} data-first-touches={r.firstTouches}>
              <button
                type="button"
                className="link-button"
                data-testid="object-touched-by-link"
                title={`The Code view, filtered to ${object}`}
                onClick={() => navigate({ view: 'code', codeObject: object, codeFn: r.function })}
              >
                <code>{r.function}</code>
              </button>
              {r.location && <span className="frame-file"> {r.location}</span>}
              <span className="ns-muted small">
                {' '}
                {[r.accesses > 0 ? formatCount(r.accesses, 'access', 'accesses') : null, r.firstTouches > 0 ? formatCount(r.firstTouches, 'first touch', 'first touches') : null]
                  .filter(Boolean)
                  .join(', ')}
              </span>
            </li>
          ))}
        </ol>
        {table.functionCount > table.rows.length && <p className="ns-muted small">and {formatCount(table.functionCount - table.rows.length, 'more function')}</p>}
      </>
    );
  }
  return (
    <>
      <h4>Touched by</h4>
      <p className="ns-muted hint">
        The functions whose sampled accesses and first touches fell in this object (every allocation of its site; by code site, weighted,{' '}
        {state.range ? 'the selected range' : 'whole trace'}).
      </p>
      {body}
    </>
  );
}
