import { CapabilityList, formatCount } from '@numascope/viz';
import type { CaptureSource, TraceManifest } from '@numascope/policy-engine';

function sourceDetail(s: CaptureSource): string {
  const parts: string[] = [];
  if (s.samplePeriod !== null) parts.push(s.samplePeriod === 1 ? 'every event' : `1 sample per ${formatCount(s.samplePeriod, 'event')}`);
  if (s.intervalMs !== null) parts.push(`every ${formatCount(s.intervalMs)} ms`);
  return parts.join(', ');
}

/** What the capture could measure (capability badges) and which sources it used or could not use, and why. */
export function CapturePanel({ manifest }: { manifest: TraceManifest }) {
  const { capture } = manifest;
  return (
    <section className="panel" aria-labelledby="capture-heading" id="capture">
      <h2 id="capture-heading">Capture</h2>
      <h3>Capabilities</h3>
      <p className="ns-muted hint">Hover or focus a badge for how the metric was obtained, or why it is unavailable.</p>
      <CapabilityList capabilities={capture.capabilities} />
      <h3>Sources</h3>
      {capture.sources.length === 0 ? (
        <p className="ns-muted">The trace lists no capture sources.</p>
      ) : (
        <table className="data" data-testid="sources-table">
          <thead>
            <tr>
              <th scope="col">source</th>
              <th scope="col" className="text">
                status
              </th>
              <th scope="col" className="text">
                detail
              </th>
            </tr>
          </thead>
          <tbody>
            {capture.sources.map((s) => (
              <tr key={s.id} data-testid={`source-${s.id}`} data-status={s.status}>
                <th scope="row">
                  <code>{s.id}</code>
                </th>
                <td className="text nowrap">
                  <span className={`status status--${s.status}`}>{s.status}</span>
                </td>
                <td className="text">
                  {s.reason ?? <span className="ns-muted">no reason given</span>}
                  {sourceDetail(s) && <span className="ns-muted"> · {sourceDetail(s)}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {capture.lostSamples > 0 && (
        <p className="warning" data-testid="lost-samples-warning">
          The kernel dropped {formatCount(capture.lostSamples, 'sample')} during the capture; counts below are lower than what happened.
        </p>
      )}
      {capture.notes.length > 0 && (
        <>
          <h3>Notes</h3>
          <ul className="notes">
            {capture.notes.map((n, i) => (
              <li key={i}>{n}</li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
