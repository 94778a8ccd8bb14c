/** Shown while a file is dragged over the window. */
export function DropOverlay() {
  return (
    <div className="drop-overlay" data-testid="drop-overlay" aria-hidden="true">
      <div className="drop-overlay__box">Drop a .numascope trace to open it</div>
    </div>
  );
}
