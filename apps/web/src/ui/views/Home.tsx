/**
 * The first screen with a `numascope serve` token (issue 35): the bundled sample traces, the
 * recordings this server kept, and the way into Live, side by side (stacked on a narrow window).
 * Every link keeps the token, so Live stays one click away from whatever opens next.
 */
import { useMemo, useSyncExternalStore } from 'react';
import { LiveApi } from '../live/client';
import { RecentRecordings } from '../live/LiveView';
import { liveSession } from '../live/store';
import type { LiveState } from '../live/machine';
import { OpenFileButton } from './OpenFileButton';
import { SampleList, UrlForm } from './Landing';
import type { SamplesState } from './Landing';

export function Home({ samples, token, onFile, onLive }: { samples: SamplesState; token: string; onFile: (f: File) => void; onLive: () => void }) {
  const session = useMemo(() => liveSession(), []);
  const state = useSyncExternalStore(
    (fn) => session.subscribe(fn),
    () => session.state,
  );
  return (
    <div className="home" data-testid="home">
      <section className="home__intro">
        <h1>numascope</h1>
        <p>
          Open a <code>.numascope</code> trace, one of the samples, or a recording made on this server; or record a process live.
        </p>
        <div className="home__open">
          <OpenFileButton onFile={onFile} label="Choose a trace file…" />
          <UrlForm token={token} />
        </div>
      </section>
      <div className="home__columns">
        <SampleList samples={samples} token={token} />
        <div className="home__recent">
          {session.client instanceof LiveApi ? (
            <RecentRecordings api={session.client} phase={state.phase.kind} />
          ) : (
            <p className="ns-muted">No server to list recordings from.</p>
          )}
        </div>
        <LiveCard state={state} onLive={onLive} />
      </div>
    </div>
  );
}

/** What Live does, whether a recording of this tab is under way, and the button that opens it. */
function LiveCard({ state, onLive }: { state: LiveState; onLive: () => void }) {
  const p = state.phase;
  const busy = p.kind === 'running' || p.kind === 'stopping' || p.kind === 'downloading';
  return (
    <section className="panel home__live" aria-labelledby="home-live-heading" data-testid="home-live">
      <h2 id="home-live-heading">Live</h2>
      <p>
        Record a command or a running process on the machine running <code>numascope serve</code>: page faults and page placement per
        window as it runs, then the trace in the views. From there, recommend a placement, dry-run it and apply it.
      </p>
      {busy && (
        <p className="notice" data-testid="home-live-busy">
          A recording of this tab is under way.
        </p>
      )}
      <button type="button" className="primary" data-testid="home-open-live" onClick={onLive}>
        {busy ? 'Back to the recording →' : 'Open Live →'}
      </button>
    </section>
  );
}
