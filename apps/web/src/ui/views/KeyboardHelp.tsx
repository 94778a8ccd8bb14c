/**
 * Keyboard shortcuts of an open trace: digits pick a view (1–9 the first nine tabs, 0 the tenth), Z zooms into the selection (Shift+Z
 * back out), T focuses the timeline, ? lists them all (with the timeline's own keys).
 */
import { useEffect, useRef } from 'react';
import { useTraceContext } from '../hooks/trace-context';
import { VIEWS } from '../url-state';
import { VIEW_LABELS, viewKey, zoomIn, zoomTo } from '../selectors/navigation';
import { viewForKey } from '../selectors/navigation';

/** Keys typed into a form control, or with a modifier, are the control's (or the browser's). */
function ignored(e: KeyboardEvent): boolean {
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return true;
  const t = e.target as HTMLElement | null;
  if (!t) return false;
  const tag = t.tagName;
  return tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || t.isContentEditable || t.closest('dialog') !== null;
}

export function useViewShortcuts(enabled: boolean, { onHelp }: { onHelp: () => void }) {
  const { state, navigate } = useTraceContext();
  const stateRef = useRef(state);
  stateRef.current = state;
  useEffect(() => {
    if (!enabled) return;
    const onKey = (e: KeyboardEvent) => {
      if (ignored(e)) return;
      const s = stateRef.current;
      const view = viewForKey(e.key);
      if (view) {
        e.preventDefault();
        if (view !== s.view) navigate({ view });
        return;
      }
      switch (e.key) {
        case '?':
          e.preventDefault();
          onHelp();
          return;
        case 'z':
          e.preventDefault();
          navigate(zoomIn(s));
          return;
        case 'Z':
          e.preventDefault();
          if (s.zoom.length > 0) navigate(zoomTo(s, s.zoom.length - 1));
          return;
        case 't':
          e.preventDefault();
          document.querySelector<SVGElement>('[data-testid="timeline"] svg')?.focus();
          return;
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [enabled, navigate, onHelp]);
}

export const SHORTCUTS: Array<{ keys: string; what: string }> = [
  ...VIEWS.map((v, i) => ({ keys: viewKey(i), what: `${VIEW_LABELS[v]} view` })),
  { keys: 'Z', what: 'Zoom the timeline into the selected range (adds a breadcrumb)' },
  { keys: 'Shift+Z', what: 'Zoom back out one level' },
  { keys: 'T', what: 'Focus the timeline' },
  { keys: '?', what: 'This list' },
];

export const TIMELINE_KEYS: Array<{ keys: string; what: string }> = [
  { keys: '← →', what: 'Move the selection by about 2 % of the trace (with none: select the first/last step)' },
  { keys: 'Shift+← →', what: 'Shrink or grow the selection' },
  { keys: 'Alt+← →', what: 'The same by one window' },
  { keys: 'PageUp PageDown', what: 'Move the selection by its own length' },
  { keys: 'Shift+PageUp PageDown', what: 'Shrink or grow it by a quarter of the trace' },
  { keys: 'Home End', what: 'Move it to the start or end (with none: select the first or last quarter)' },
  { keys: 'Shift+Home End', what: 'Extend it to the start or end' },
  { keys: 'Escape', what: 'Clear the selection' },
];

export function KeyboardHelp({ onClose }: { onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (typeof d.showModal === 'function' && !d.open) d.showModal();
    const closed = () => onClose();
    d.addEventListener('close', closed);
    return () => d.removeEventListener('close', closed);
  }, [onClose]);
  const table = (caption: string, rows: Array<{ keys: string; what: string }>, id: string) => (
    <table className="keys-table" data-testid={id}>
      <caption>{caption}</caption>
      <tbody>
        {rows.map((r) => (
          <tr key={r.keys}>
            <th scope="row">
              <kbd>{r.keys}</kbd>
            </th>
            <td>{r.what}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
  return (
    <dialog ref={ref} className="keys-dialog" aria-labelledby="keys-title" data-testid="keyboard-help">
      <h2 id="keys-title">Keyboard shortcuts</h2>
      {table('Anywhere in an open trace (not while typing in a field)', SHORTCUTS, 'keyboard-help-global')}
      {table('On the focused timeline', TIMELINE_KEYS, 'keyboard-help-timeline')}
      <p className="ns-muted small">Tabs: ← → move between views. The first Tab on a page offers “Skip to view”.</p>
      <form method="dialog">
        <button type="submit" data-testid="keyboard-help-close" autoFocus>
          Close
        </button>
      </form>
    </dialog>
  );
}
