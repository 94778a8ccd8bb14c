import { useRef } from 'react';
import type { KeyboardEvent } from 'react';
import { VIEWS } from '../url-state';
import type { ViewId } from '../url-state';
import { VIEW_LABELS, viewKey } from '../selectors/navigation';

/** Views named in the navigation but not built yet (none now; Live is the header's "Live" button). */
const LATER: string[] = [];

/** The view tabs (arrow keys move between them, as WAI-ARIA tabs do). */
export function ViewNav({ view, onView }: { view: ViewId; onView: (v: ViewId) => void }) {
  const refs = useRef<Array<HTMLButtonElement | null>>([]);
  function key(e: KeyboardEvent<HTMLButtonElement>, i: number) {
    let next = -1;
    if (e.key === 'ArrowRight') next = (i + 1) % VIEWS.length;
    else if (e.key === 'ArrowLeft') next = (i - 1 + VIEWS.length) % VIEWS.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = VIEWS.length - 1;
    else return;
    e.preventDefault();
    onView(VIEWS[next]!);
    refs.current[next]?.focus();
  }
  return (
    <nav className="view-nav" aria-label="Views">
      <div role="tablist" aria-label="Views of this trace" className="view-nav__tabs">
        {VIEWS.map((v, i) => (
          <button
            key={v}
            ref={(el) => {
              refs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`tab-${v}`}
            aria-selected={view === v}
            aria-controls="view-panel"
            tabIndex={view === v ? 0 : -1}
            className="view-nav__tab"
            data-testid={`tab-${v}`}
            onClick={() => onView(v)}
            onKeyDown={(e) => key(e, i)}
            aria-keyshortcuts={viewKey(i)}
            title={`${VIEW_LABELS[v]} (key ${viewKey(i)})`}
          >
            {VIEW_LABELS[v]}
          </button>
        ))}
      </div>
      {LATER.length > 0 && <ul className="view-nav__later" aria-label="Views that come with the policy engine">
        {LATER.map((l) => (
          <li key={l} aria-disabled="true" title={`${l}: comes with the policy engine`}>
            {l}
          </li>
        ))}
        <li className="view-nav__later-note ns-muted">come with the policy engine</li>
      </ul>}
    </nav>
  );
}
