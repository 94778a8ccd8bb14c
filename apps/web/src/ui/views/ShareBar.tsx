import { useEffect, useState } from 'react';
import type { TraceSummary } from '@numascope/policy-engine';
import { baseName, download, exportPng, exportSvg, exportTables, hasFigures } from '../export';
import { beginWork } from '../idle';
import { markdownSummary } from '../markdown';
import type { MarkdownInput } from '../markdown';

/** Views whose Markdown summary carries the policy engine's predictions. */
const ENGINE_VIEWS = new Set(['traffic', 'compare', 'decisions', 'recommend', 'diagnose']);
import type { RegionMeta } from '@numascope/policy-engine';
import { regionRows } from '../selectors/summary';
import { saveTraceBytes } from '../live/desktop-shell';
import { useTraceContext } from '../hooks/trace-context';
import { REPORT_SHELL_URL, buildReport, isReport } from '../report';
import { engineRequest } from '../selectors/request';
import { shareLink } from '../selectors/navigation';

/**
 * Whether the panel holds a figure PNG/SVG can export, kept up to date as the view draws
 * (a MutationObserver on the panel, checked at most once a frame).
 */
function useHasFigures(panel: () => HTMLElement | null, view: string): boolean {
  const [has, setHas] = useState(false);
  useEffect(() => {
    const root = panel();
    if (!root) return;
    let frame = 0;
    const check = () => {
      frame = 0;
      setHas(hasFigures(root));
    };
    check();
    const observer = new MutationObserver(() => {
      if (frame === 0) frame = requestAnimationFrame(check);
    });
    observer.observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-export'] });
    return () => {
      observer.disconnect();
      if (frame !== 0) cancelAnimationFrame(frame);
    };
  }, [panel, view]);
  return has;
}

/**
 * Export the current view (PNG and SVG where it has a figure: absent on views without one), a
 * Markdown summary, or the trace file itself.
 */
export function ShareBar({
  summary,
  inRange,
  source,
  regions,
  panel,
}: {
  summary: TraceSummary;
  inRange: TraceSummary;
  source: string;
  regions: RegionMeta[];
  /** The element holding the current view's figures. */
  panel: () => HTMLElement | null;
}) {
  const { client, traceId, state } = useTraceContext();
  const [message, setMessage] = useState<string | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const name = baseName(source);
  const suffix = `${name}-${state.view}${state.range ? `-${state.range.fromUs}-${state.range.toUs}us` : ''}`;
  const figures = useHasFigures(panel, state.view);
  const title = `${source} · ${state.view}${state.range ? ` · ${state.range.fromUs}–${state.range.toUs} µs` : ''}`;

  async function run(what: string, f: () => Promise<void>) {
    const end = beginWork();
    setMessage(null);
    setCopied(null);
    try {
      await f();
    } catch (e) {
      setMessage(`${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      end();
    }
  }

  return (
    <div className="share-bar" role="group" aria-label="Export and share">
      <span className="ns-muted share-bar__label">Export</span>
      {figures && (
        <>
          <button
            type="button"
            data-testid="export-png"
            onClick={() =>
              run('PNG export', async () => {
                const root = panel();
                if (root) download(await exportPng(root, title), `${suffix}.png`);
              })
            }
          >
            PNG
          </button>
          <button
            type="button"
            data-testid="export-svg"
            onClick={() =>
              run('SVG export', async () => {
                const root = panel();
                if (root) download(new Blob([exportSvg(root, title).svg], { type: 'image/svg+xml' }), `${suffix}.svg`);
              })
            }
          >
            SVG
          </button>
        </>
      )}
      <button
        type="button"
        data-testid="export-markdown"
        onClick={() =>
          run('Markdown summary', async () => {
            if (!client) throw new Error('the trace reader is not running');
            const table = await client.query(traceId, { kind: 'regions', range: state.range });
            const link = shareLink(source);
            // The engine views' numbers: the same (cached) analysis the view shows.
            let analysis: MarkdownInput['analysis'] = null;
            if (ENGINE_VIEWS.has(state.view) && client.analyze) {
              const outcome = await client.analyze(traceId, null, engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates));
              analysis = 'view' in outcome ? outcome.view : { error: outcome.error.message };
            }
            // The view's exported tables (Compare's), cell for cell as the PNG/SVG draw them.
            const root = panel();
            const tables = root ? exportTables(root) : [];
            const md = markdownSummary({ source, summary, inRange, range: state.range, regions: regionRows(regions, table), link, view: state.view, analysis, tables });
            download(new Blob([md], { type: 'text/markdown' }), `${suffix}.md`);
          })
        }
      >
        Markdown summary
      </button>
      <button
        type="button"
        data-testid="save-trace"
        onClick={() =>
          run('Saving the trace', async () => {
            if (!client) throw new Error('the trace reader is not running');
            // The desktop app's native save dialog, else a download.
            await saveTraceBytes(await client.bytes(traceId), `${name}.numascope`, download);
          })
        }
      >
        Save trace
      </button>
      {!isReport() && (
        <button
          type="button"
          data-testid="export-html-report"
          title="One .html file with this trace and the app's views in it: it opens from a file in any browser, with no server and nothing installed"
          onClick={() =>
            run('HTML report', async () => {
              if (!client) throw new Error('the trace reader is not running');
              download(new Blob([await htmlReport(await client.bytes(traceId), `${name}.numascope`)], { type: 'text/html' }), `${name}-report.html`);
            })
          }
        >
          HTML report
        </button>
      )}
      <button
        type="button"
        data-testid="copy-link"
        title="A link to this view (trace, view, range, selection), without the live session's token"
        onClick={() =>
          run('Copy link', async () => {
            const link = shareLink(source);
            if (!link) {
              throw new Error('this trace was opened from a file, so a link cannot carry it (nor can one carry a live recording without the session token): send the trace file (Save trace) or an HTML report instead');
            }
            await navigator.clipboard.writeText(link);
            setCopied(link);
          })
        }
      >
        Copy link
      </button>
      {copied && (
        <span className="ns-muted small" role="status" data-testid="copied-link" data-link={copied}>
          Link copied (no session token in it).
        </span>
      )}
      {message && (
        <span className="warning" role="alert">
          {message}
        </span>
      )}
    </div>
  );
}

/** The report shell built beside the app (dist/report.html) with `bytes` embedded as trace `name`. */
async function htmlReport(bytes: ArrayBuffer, name: string): Promise<string> {
  if (import.meta.env.DEV) {
    throw new Error('the HTML report is built by `npm run build -w apps/web`: use the built app (vite preview, numascope serve), not the dev server');
  }
  let response: Response;
  try {
    response = await fetch(REPORT_SHELL_URL, { cache: 'no-store' });
  } catch (e) {
    throw new Error(`the report shell ${REPORT_SHELL_URL} could not be read (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!response.ok) {
    throw new Error(`the report shell ${REPORT_SHELL_URL} is missing (HTTP ${response.status}): rebuild the web app with \`npm run build -w apps/web\``);
  }
  return buildReport(await response.text(), bytes, name);
}
