import { useState } from 'react';
import type { FormEvent } from 'react';
import { formatBytes, formatCount, formatDurationUs } from '@numascope/viz';
import type { SampleIndexEntry } from '../sample-index';
import { OpenFileButton } from './OpenFileButton';
import { sampleHref } from '../selectors/navigation';

export type SamplesState =
  | { status: 'loading' }
  | { status: 'ready'; samples: SampleIndexEntry[] }
  | { status: 'error'; message: string };

/** First screen: open a file or URL, or pick one of the bundled sample traces. */
export function Landing({ samples, onFile }: { samples: SamplesState; onFile: (f: File) => void }) {
  return (
    <div className="landing" data-testid="landing">
      <section className="intro">
        <h1>Open a NUMA trace</h1>
        <p>
          numascope shows where a program's threads ran and which NUMA node held the memory they touched. Open a{' '}
          <code>.numascope</code> trace recorded with <code>numascope record</code>, or one of the samples below.
        </p>
        <div className="drop-zone">
          <p>Drop a trace anywhere on this page, or</p>
          <OpenFileButton onFile={onFile} label="Choose a trace file…" primary />
        </div>
        <UrlForm token={null} />
        <p className="ns-muted hint">
          A link to <code>?trace=URL</code> opens that trace directly; the file is read in your browser and not uploaded anywhere.
        </p>
      </section>
      <SampleList samples={samples} token={null} />
    </div>
  );
}

/** The bundled sample traces (`samples/index.json`), each a link that opens it. */
export function SampleList({ samples, token }: { samples: SamplesState; token: string | null }) {
  return (
    <section className="samples" aria-labelledby="samples-heading">
      <h2 id="samples-heading">Sample traces</h2>
      {samples.status === 'loading' && <p className="ns-muted">Loading the list of samples…</p>}
      {samples.status === 'error' && (
        <p className="warning" data-testid="samples-error">
          {samples.message}
        </p>
      )}
      {samples.status === 'ready' && samples.samples.length === 0 && (
        <p className="ns-muted" data-testid="samples-empty">
          No sample traces are bundled with this build.
        </p>
      )}
      {samples.status === 'ready' && samples.samples.length > 0 && (
        <ul className="sample-list" data-testid="sample-list">
          {samples.samples.map((s) => (
            <li key={s.file} className="sample" data-testid={`sample-${s.file}`}>
              <a href={sampleHref(s.url, token)} className="sample__link">
                {s.file}
              </a>
              {s.origin && (
                <span className={`origin-tag origin-tag--${s.origin.kind}`}>{s.origin.kind}</span>
              )}
              {s.collection === 'extra' && <span className="origin-tag">this machine</span>}
              <p className="sample__description">{s.origin?.description || s.error || 'No description.'}</p>
              <p className="sample__meta ns-muted">
                {[
                  s.machine ? `${s.machine.name}: ${formatCount(s.machine.nodes, 'node')}, ${formatCount(s.machine.cpus, 'cpu')}` : null,
                  s.sampleCount !== null ? formatCount(s.sampleCount, 'sample') : null,
                  s.durationUs !== null ? formatDurationUs(s.durationUs) : null,
                  formatBytes(s.sizeBytes),
                  s.origin?.kind === 'synthetic' ? `model ${s.origin.model ?? '?'}, seed ${s.origin.seed ?? '?'}` : null,
                ]
                  .filter(Boolean)
                  .join(' · ')}
              </p>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Opens a trace by its URL (`?trace=URL`, keeping this tab's serve token when it has one). */
export function UrlForm({ token }: { token: string | null }) {
  const [url, setUrl] = useState('');
  function openUrl(e: FormEvent) {
    e.preventDefault();
    const trace = `trace=${encodeURIComponent(url.trim())}`;
    if (url.trim()) window.location.search = token ? `?token=${encodeURIComponent(token)}&${trace}` : `?${trace}`;
  }
  return (
    <form className="url-form" onSubmit={openUrl}>
      <label htmlFor="trace-url">Or open a URL</label>
      <input
        id="trace-url"
        type="url"
        inputMode="url"
        placeholder="https://example.com/run.numascope"
        value={url}
        onChange={(e) => setUrl(e.target.value)}
      />
      <button type="submit">Open</button>
    </form>
  );
}
