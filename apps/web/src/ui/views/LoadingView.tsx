import { formatBytes, formatPercent } from '@numascope/viz';

export interface LoadingState {
  source: string;
  phase: 'fetching' | 'reading' | 'parsing';
  loadedBytes: number;
  totalBytes: number | null;
}

export function LoadingView({ state }: { state: LoadingState }) {
  const { phase, loadedBytes, totalBytes } = state;
  const what =
    phase === 'fetching'
      ? `Loading ${state.source}…`
      : phase === 'reading'
        ? `Reading ${state.source}…`
        : `Parsing ${state.source}…`;
  return (
    <section className="loading" role="status" aria-live="polite" data-testid="loading">
      <p className="loading__what">{what}</p>
      {phase === 'fetching' && (
        <>
          {totalBytes ? (
            <progress max={totalBytes} value={loadedBytes} aria-label="Download progress" />
          ) : (
            <progress aria-label="Download progress" />
          )}
          <p className="ns-muted">
            {formatBytes(loadedBytes)}
            {totalBytes ? ` of ${formatBytes(totalBytes)} (${formatPercent(loadedBytes / totalBytes, 0)})` : ''}
          </p>
        </>
      )}
      {phase === 'parsing' && (
        <>
          <progress aria-label="Parsing" />
          <p className="ns-muted">Reading the tables in a background worker; the page stays responsive.</p>
        </>
      )}
    </section>
  );
}
