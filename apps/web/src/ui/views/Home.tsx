/**
 * The first screen with a `numascope serve` token (issue 35): the bundled sample traces, the
 * recordings this server kept, and the way into Live, side by side (stacked on a narrow window).
 * Every link keeps the token, so Live stays one click away from whatever opens next.
 */
import { useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { beginWork } from '../idle';
import { fromLoopRecord } from '../live/loop';
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
        <LiveCard state={state} onLive={onLive} api={session.client instanceof LiveApi ? session.client : null} token={token} />
      </div>
    </div>
  );
}

/** What Live does, whether a recording of this tab is under way, and the button that opens it. */
function LiveCard({ state, onLive, api, token }: { state: LiveState; onLive: () => void; api: LiveApi | null; token: string }) {
  const p = state.phase;
  const busy = p.kind === 'running' || p.kind === 'stopping' || p.kind === 'downloading';
  const loop = useKeptLoop(api);
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
      {loop && (
        <p className="notice" data-testid="home-loop" data-recording={loop.recording}>
          A record → apply → record again loop of pid {loop.pid} is kept on this server (from recording <code>{loop.recording}</code>
          , {loop.step}).{' '}
          <a href={`?token=${encodeURIComponent(token)}&view=live&loop=${encodeURIComponent(loop.recording)}`} data-testid="home-open-loop">
            Back to the loop →
          </a>
        </p>
      )}
      <button type="button" className="primary" data-testid="home-open-live" onClick={onLive}>
        {busy ? 'Back to the recording →' : 'Open Live →'}
      </button>
    </section>
  );
}

/** The loop this server kept last (GET /api/loop), as the Live card names it; null when none or unreadable. */
function useKeptLoop(api: LiveApi | null): { recording: string; pid: number; step: string } | null {
  const [loop, setLoop] = useState<{ recording: string; pid: number; step: string } | null>(null);
  useEffect(() => {
    if (!api) return;
    let live = true;
    const done = beginWork();
    api
      .latestLoop()
      .then((l) => {
        if (!live || !l) return;
        const parsed = fromLoopRecord(l.loop, l.recording);
        if ('error' in parsed) return;
        const s = parsed.state;
        const step = s.after ? 'recorded again' : s.apply.kind === 'done' ? 'applied' : s.dry.kind === 'done' ? 'dry run done' : s.recommend.kind === 'done' ? 'plan made' : 'started';
        setLoop({ recording: l.recording, pid: s.before!.pid, step });
      })
      .catch(() => {})
      .finally(done);
    return () => {
      live = false;
    };
  }, [api]);
  return loop;
}
