import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { MouseEvent as ReactMouseEvent } from 'react';
import { publishState } from './idle';
import { TraceContext } from './hooks/trace-context';
import type { TraceContextValue } from './hooks/trace-context';
import { DEFAULT_VIEW_STATE, parseViewState, writeViewState } from './url-state';
import type { ViewState } from './url-state';
import type { AppState } from './idle';
import { TraceWorkerClient } from '../worker/client';
import { toFailure } from '../worker/protocol';
import { fetchTraceBytes, readFileBytes } from './load';
import { idleStateOf, initialLoadState, loadReducer } from './load-state';
import type { LoadEvent, LoadState } from './load-state';
import type { SampleIndex } from './sample-index';
import { DropOverlay } from './views/DropOverlay';
import { ErrorView } from './views/ErrorView';
import { Home } from './views/Home';
import { Landing } from './views/Landing';
import type { SamplesState } from './views/Landing';
import { LoadingView } from './views/LoadingView';
import { OpenFileButton } from './views/OpenFileButton';
import { RenderErrorBoundary } from './views/RenderErrorBoundary';
import { TraceView } from './views/TraceView';
import { LiveView } from './live/LiveView';
import { setTraceHandler } from './live/store';
import { setOpenLiveHandler } from './live/apply';
import { pageToken } from './live/token';
import { desktopBridge } from './live/desktop';
import { desktopShell, openedToFile, parseDesktopCommand, setDesktopOpenHandler } from './live/desktop-shell';
import type { OpenedTrace } from '@numascope/protocol';
import { LiveApi, browserDeps } from './live/client';
import { recordingTraceName } from './live/session';
import { embeddedTrace, isReport } from './report';

/** This page is a single-file HTML report (report.ts): it opens its embedded trace and needs no server. */
const REPORT = isReport();

/** The address-bar key of a live recording's trace (?recording=ID, with the serve token). */
const RECORDING_KEY = 'recording:';

function traceParam(): string | null {
  const value = new URLSearchParams(window.location.search).get('trace');
  return value && value.trim() ? value.trim() : null;
}

function recordingParam(): string | null {
  const value = new URLSearchParams(window.location.search).get('recording');
  return value && /^[0-9a-zA-Z_-]{1,64}$/.test(value) ? value : null;
}

/**
 * What the address bar asks to open: a ?trace= URL, or `recording:ID` for a live recording of
 * this page's numascope serve (?recording=ID&token=…), so a reload reopens it.
 */
function locationKey(): string | null {
  const url = traceParam();
  if (url) return url;
  const recording = recordingParam();
  return recording && pageToken() ? RECORDING_KEY + recording : null;
}

/**
 * Whether the first screen is Live: in the desktop app, and with a serve token at `?view=live`.
 * With a token alone the first screen is the home page (samples, recordings, Live side by side).
 */
function liveStart(): boolean {
  const q = new URLSearchParams(window.location.search);
  // `?loop=ID` is the live loop's own address (LoopPanel): it opens on Live too.
  const liveView = q.get('view') === 'live' || q.has('loop');
  return Boolean(desktopBridge() || (pageToken() && liveView));
}

export function App() {
  // The load state (load-state.ts), with a ref that always holds the newest: the async steps of a
  // load read their token from it right after dispatching, and event handlers read the shown URL.
  const [load, setLoad] = useState<LoadState>(() => initialLoadState(locationKey() ?? (REPORT ? 'HTML report' : null), liveStart()));
  const loadRef = useRef(load);
  const dispatch = useCallback((e: LoadEvent) => {
    loadRef.current = loadReducer(loadRef.current, e);
    setLoad(loadRef.current);
    return loadRef.current.token;
  }, []);
  const view = load.screen;
  /** Idle state of the Live screen (LiveView reports it). */
  const [liveState, setLiveState] = useState<AppState>('loading');
  const client = useRef<TraceWorkerClient | null>(null);
  const { viewState, viewStateRef, setViewState, navigate } = useViewState();

  useEffect(() => {
    client.current = new TraceWorkerClient();
    return () => {
      client.current?.dispose();
      client.current = null;
    };
  }, []);

  /** Hands load `token`'s bytes to the Worker; the answer is dropped when a newer load started meanwhile (the reducer's token check). */
  const parse = useCallback(
    async (token: number, bytes: ArrayBuffer) => {
      if (token !== loadRef.current.token) return;
      dispatch({ type: 'parsing', token, size: bytes.byteLength });
      const worker = client.current ?? (client.current = new TraceWorkerClient());
      const result = await worker.open(bytes);
      dispatch({ type: 'opened', token, result });
    },
    [dispatch],
  );

  const openUrl = useCallback(
    async (url: string) => {
      const recording = url.startsWith(RECORDING_KEY) ? url.slice(RECORDING_KEY.length) : null;
      const token = dispatch({ type: 'open-url', url, source: recording ? recordingTraceName(recording) : undefined });
      try {
        const live = pageToken();
        const bytes =
          recording && live
            ? await new LiveApi(live, browserDeps()).trace(recording)
            : await fetchTraceBytes(url, (p) => dispatch({ type: 'progress', token, ...p }));
        await parse(token, bytes);
      } catch (e) {
        dispatch({ type: 'failed', token, error: toFailure(e) });
      }
    },
    [dispatch, parse],
  );

  const openFile = useCallback(
    async (file: File) => {
      // The page no longer shows the ?trace= URL's trace: drop it (and the old view state) so a reload does not reopen it.
      // A numascope serve token stays: Live mode (and applying a plan) still needs it.
      const live = pageToken();
      const keep = live ? `?token=${encodeURIComponent(live)}` : '';
      if (window.location.search !== keep) window.history.pushState(null, '', window.location.pathname + keep);
      viewStateRef.current = DEFAULT_VIEW_STATE;
      setViewState(DEFAULT_VIEW_STATE);
      const token = dispatch({ type: 'open-file', name: file.name, size: file.size });
      try {
        await parse(token, await readFileBytes(file));
      } catch (e) {
        dispatch({ type: 'failed', token, error: toFailure(e) });
      }
    },
    [dispatch, parse, viewStateRef, setViewState],
  );

  // Desktop app: the Open buttons and File ▸ Open use the native dialog; files from Open Recent, the
  // command line or the desktop arrive as `open-path` (live/desktop-shell.ts). Both end in openFile.
  const openFromDesktop = useCallback(
    async (source: string, get: () => Promise<OpenedTrace | null>) => {
      let opened: OpenedTrace | null;
      try {
        opened = await get();
      } catch (e) {
        const raw = e instanceof Error ? e.message : String(e);
        const message = raw.replace(/^Error invoking remote method '[^']*': (?:\w*Error: )?/, '');
        dispatch({ type: 'error', source, error: { code: 'read-failed', message } });
        return;
      }
      if (opened) await openFile(openedToFile(opened));
    },
    [dispatch, openFile],
  );
  useDesktopCommands(openFromDesktop, navigate, dispatch, loadRef);

  // "Apply through live mode" in the Recommendations view opens the Live screen.
  useEffect(() => setOpenLiveHandler(() => void dispatch({ type: 'show-live' })), [dispatch]);

  useLiveRecordingTraces(dispatch, parse, viewStateRef, setViewState);

  // An HTML report's embedded trace, opened once on start.
  const openReport = useCallback(async () => {
    const source = 'HTML report';
    let embedded: ReturnType<typeof embeddedTrace>;
    try {
      embedded = embeddedTrace();
    } catch (e) {
      dispatch({ type: 'error', source, error: { code: 'read-failed', message: e instanceof Error ? e.message : String(e) } });
      return;
    }
    if (!embedded?.bytes) {
      const message = 'This HTML report has no trace in it (it is the empty report shell). Export one from a trace\'s Export bar: "HTML report".';
      dispatch({ type: 'error', source, error: { code: 'no-trace', message } });
      return;
    }
    const token = dispatch({ type: 'open-bytes', name: embedded.name, size: embedded.bytes.byteLength });
    await parse(token, embedded.bytes);
  }, [dispatch, parse]);

  // ?trace=URL (or ?recording=ID) on start and on back/forward; an HTML report's own trace on start.
  useEffect(() => {
    const fromLocation = () => {
      const url = locationKey();
      const state = parseViewState(window.location.search);
      viewStateRef.current = state;
      setViewState(state);
      // Back/forward between screens of the trace on show: only the view state changes.
      if (url === loadRef.current.url) return;
      if (!url && REPORT) {
        if (loadRef.current.url === undefined) void openReport();
        return;
      }
      if (url) void openUrl(url);
      else dispatch({ type: 'home', live: liveStart() });
    };
    fromLocation();
    window.addEventListener('popstate', fromLocation);
    return () => window.removeEventListener('popstate', fromLocation);
  }, [openUrl, openReport, dispatch, viewStateRef, setViewState]);

  const samples = useSampleList(view.kind);

  const dragging = useFileDrop(openFile);

  // Idle signal, published after the view for the state is on screen.
  const state: AppState = idleStateOf(load, liveState, !REPORT && samples.status === 'loading');
  useEffect(() => publishState(state), [state, view]);

  const traceId = view.kind === 'ready' ? view.overview.traceId : 0;
  const context = useMemo<TraceContextValue>(
    () => ({ client: client.current, traceId, state: viewState, navigate }),
    // client.current is set once on mount, before any trace is ready (a ref: not a dependency).
    [traceId, viewState, navigate],
  );

  // With a serve token the first page is the home page (Home); without, the landing page.
  const homeToken = REPORT ? null : pageToken();
  const title = view.kind === 'ready' || view.kind === 'error' ? `${view.source} · numascope` : 'numascope';
  useEffect(() => {
    document.title = title;
  }, [title]);

  return (
    <div className="app">
      {/* First in the tab order: past the header and the trace's chrome, to the view itself. */}
      <a className="skip-link" href={view.kind === 'ready' ? '#view-panel' : '#main-content'} data-testid="skip-link" onClick={skipTo}>
        {view.kind === 'ready' ? 'Skip to view' : 'Skip to content'}
      </a>
      <header className="topbar">
        {/* Home keeps the live session: its token stays in this tab's own links (never in shared ones). */}
        {REPORT ? (
          <span className="brand">numascope</span>
        ) : (
          <a href={homeHref()} className="brand" aria-label="numascope home: sample traces">
            numascope
          </a>
        )}
        <span className="topbar__tag ns-muted" data-testid="topbar-tag">
          {REPORT ? 'HTML report: read-only, no server (Open… still opens a trace file)' : 'NUMA memory-placement profiler'}
        </span>
        <span className="topbar__spacer" />
        {!REPORT && (
          <button
            type="button"
            className="topbar__live"
            aria-current={view.kind === 'live' ? 'page' : undefined}
            data-testid="open-live"
            onClick={() => dispatch({ type: 'show-live' })}
          >
            Live
          </button>
        )}
        <OpenFileButton onFile={(f) => void openFile(f)} />
      </header>
      <main className="content" id="main-content" tabIndex={-1}>
        {view.kind === 'live' && <LiveView onState={setLiveState} />}
        {view.kind === 'landing' &&
          (homeToken ? (
            <Home samples={samples} token={homeToken} onFile={(f) => void openFile(f)} onLive={() => dispatch({ type: 'show-live' })} />
          ) : (
            <Landing samples={samples} onFile={(f) => void openFile(f)} />
          ))}
        {view.kind === 'loading' && <LoadingView state={view} />}
        {view.kind === 'error' && <ErrorView source={view.source} error={view.error} onFile={(f) => void openFile(f)} />}
        {view.kind === 'ready' && (
          <RenderErrorBoundary
            key={view.token}
            source={view.source}
            fallback={(message) => (
              <RenderFailed
                source={view.source}
                message={message}
                onFile={(f) => void openFile(f)}
                onShown={() => dispatch({ type: 'crashed', token: view.token })}
              />
            )}
          >
            <TraceContext.Provider value={context}>
              <TraceView summary={view.summary} source={view.source} overview={view.overview} />
            </TraceContext.Provider>
          </RenderErrorBoundary>
        )}
      </main>
      {dragging && <DropOverlay />}
    </div>
  );
}

/** The view state, from the address bar, and `navigate`, which changes it and writes it there (a new history entry unless `replace`). */
function useViewState() {
  const [viewState, setViewState] = useState<ViewState>(() => parseViewState(window.location.search));
  const viewStateRef = useRef(viewState);
  viewStateRef.current = viewState;

  const navigate = useCallback((patch: Partial<ViewState>, options?: { replace?: boolean }) => {
    const next = { ...viewStateRef.current, ...patch };
    // "The whole trace" (a range cleared anywhere but the zoomed timeline) leaves the zoom too.
    if (patch.range === null && !('zoom' in patch)) next.zoom = [];
    // The selected object belongs to its region: another region starts on its busiest object.
    if ('region' in patch && patch.region !== viewStateRef.current.region && !('obj' in patch)) next.obj = null;
    viewStateRef.current = next;
    const search = writeViewState(window.location.search, next);
    if (search !== window.location.search) {
      const url = window.location.pathname + search + window.location.hash;
      if (options?.replace) window.history.replaceState(null, '', url);
      else window.history.pushState(null, '', url);
    }
    setViewState(next);
  }, []);
  return { viewState, viewStateRef, setViewState, navigate };
}

/**
 * Desktop app: the menu's commands (File ▸ Open, Open Recent, View, Save, Export), which do what
 * the page's own buttons do.
 */
function useDesktopCommands(
  openFromDesktop: (source: string, get: () => Promise<OpenedTrace | null>) => Promise<void>,
  navigate: (patch: Partial<ViewState>) => void,
  dispatch: (e: LoadEvent) => number,
  loadRef: { readonly current: LoadState },
) {
  useEffect(() => {
    const shell = desktopShell();
    if (!shell) return;
    const openDialog = () => void openFromDesktop('Open trace…', () => shell.openTrace());
    setDesktopOpenHandler(openDialog);
    // Export and save do what their buttons do (the buttons exist while a trace is shown).
    const click = (testId: string) => document.querySelector<HTMLButtonElement>(`[data-testid="${testId}"]`)?.click();
    const off = shell.onCommand((raw) => {
      const cmd = parseDesktopCommand(raw);
      if (!cmd) return;
      switch (cmd.command) {
        case 'open':
          return openDialog();
        case 'open-path':
          return void openFromDesktop(cmd.path, () => shell.openRecent(cmd.path));
        case 'view-live':
          return void dispatch({ type: 'show-live' });
        case 'view':
          if (loadRef.current.screen.kind === 'ready') navigate({ view: cmd.view });
          return;
        case 'save':
          return click('save-trace');
        case 'export-png':
        case 'export-svg':
        case 'export-markdown':
          return click(cmd.command);
      }
    });
    return () => {
      off();
      setDesktopOpenHandler(null);
    };
  }, [openFromDesktop, navigate, dispatch, loadRef]);
}

/** The sample list, for the landing page (none in an HTML report: it has no server to ask). */
function useSampleList(viewKind: LoadState['screen']['kind']): SamplesState {
  const [samples, setSamples] = useState<SamplesState>({ status: 'loading' });
  useEffect(() => {
    if (REPORT || viewKind !== 'landing' || samples.status !== 'loading') return;
    let live = true;
    fetch('samples/index.json')
      .then(async (r) => {
        if (!r.ok) throw new Error(`samples/index.json: HTTP ${r.status} ${r.statusText}`);
        return (await r.json()) as SampleIndex;
      })
      .then(
        (index) => live && setSamples({ status: 'ready', samples: index.samples }),
        (e: Error) => live && setSamples({ status: 'error', message: `The list of sample traces could not be loaded (${e.message}).` }),
      );
    return () => {
      live = false;
    };
  }, [viewKind, samples.status]);
  return samples;
}

/** Drag and drop of a trace file anywhere on the window: whether a file is being dragged over it. */
function useFileDrop(openFile: (file: File) => Promise<void>): boolean {
  const [dragging, setDragging] = useState(false);
  useEffect(() => {
    let depth = 0;
    const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
    const onEnter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      setDragging(true);
    };
    const onOver = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
    };
    const onLeave = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (depth === 0) setDragging(false);
    };
    const onDrop = (e: DragEvent) => {
      e.preventDefault();
      depth = 0;
      setDragging(false);
      const file = e.dataTransfer?.files[0];
      if (file) void openFile(file);
    };
    window.addEventListener('dragenter', onEnter);
    window.addEventListener('dragover', onOver);
    window.addEventListener('dragleave', onLeave);
    window.addEventListener('drop', onDrop);
    return () => {
      window.removeEventListener('dragenter', onEnter);
      window.removeEventListener('dragover', onOver);
      window.removeEventListener('dragleave', onLeave);
      window.removeEventListener('drop', onDrop);
    };
  }, [openFile]);
  return dragging;
}

/**
 * A finished live recording's trace (downloaded from numascope serve) opens in the normal views,
 * with ?recording=ID in the address bar (beside the token) so that a reload reopens it.
 */
function useLiveRecordingTraces(
  dispatch: (e: LoadEvent) => number,
  parse: (token: number, bytes: ArrayBuffer) => Promise<void>,
  viewStateRef: { current: ViewState },
  setViewState: (state: ViewState) => void,
) {
  useEffect(() => {
    setTraceHandler(async (name, bytes, recording) => {
      viewStateRef.current = DEFAULT_VIEW_STATE;
      setViewState(DEFAULT_VIEW_STATE);
      const live = pageToken();
      let url: string | undefined;
      if (live && recording) {
        url = RECORDING_KEY + recording;
        window.history.pushState(null, '', `${window.location.pathname}?token=${encodeURIComponent(live)}&recording=${encodeURIComponent(recording)}`);
      }
      const token = dispatch({ type: 'open-bytes', name, size: bytes.byteLength, url });
      await parse(token, bytes);
    });
  }, [dispatch, parse, viewStateRef, setViewState]);
}

/** A view crashed: show it as an error, and tell App so the idle signal says 'error'. */
function RenderFailed({
  source,
  message,
  onFile,
  onShown,
}: {
  source: string;
  message: string;
  onFile: (f: File) => void;
  onShown: () => void;
}) {
  useEffect(onShown, [onShown]);
  return <ErrorView source={source} error={{ code: 'internal', message }} onFile={onFile} />;
}

/** Focuses a skip link's target without a fragment in the address bar (the URL is the view state). */
function skipTo(e: ReactMouseEvent<HTMLAnchorElement>) {
  const target = document.getElementById(e.currentTarget.getAttribute('href')!.slice(1));
  if (!target) return;
  e.preventDefault();
  target.focus();
  target.scrollIntoView({ block: 'start' });
}

/** The home link: the landing page, with this tab's live-session token when it has one. */
function homeHref(): string {
  const token = pageToken();
  return token ? `./?token=${encodeURIComponent(token)}` : './';
}
