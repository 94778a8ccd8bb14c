import type { TraceErrorCode } from '@numascope/policy-engine';
import type { LoadFailure } from '../../worker/protocol';
import { OpenFileButton } from './OpenFileButton';

const TITLES: Record<TraceErrorCode | 'http' | 'fetch-failed' | 'read-failed' | 'worker-failed' | 'internal', string> = {
  'not-zip': 'This is not a numascope trace',
  truncated: 'The trace is truncated',
  'zip-corrupt': 'The trace file is damaged',
  'zip-unsupported': 'The trace uses a ZIP feature numascope does not read',
  'zip-limits': 'The trace is larger than numascope reads',
  'zip-crc': 'The trace file is damaged (checksum mismatch)',
  'zip-entry-name': 'The trace has an invalid entry name',
  'manifest-missing': 'The trace has no manifest',
  'manifest-invalid': 'The trace manifest is invalid',
  'manifest-limits': 'The trace manifest is larger than numascope reads',
  'wrong-format': 'This ZIP is not a numascope trace',
  'too-new': 'This trace is newer than this numascope',
  'table-missing': 'The trace is missing a table',
  'column-missing': 'A table is missing a column',
  'column-type': 'A column has the wrong type',
  'table-corrupt': 'A table in the trace is damaged',
  'column-null': 'A table has a missing value where none is allowed',
  'table-limits': 'A table is larger than numascope reads',
  'index-out-of-range': 'The trace refers to something it does not contain',
  http: 'The trace could not be downloaded',
  'fetch-failed': 'The trace could not be downloaded',
  'read-failed': 'The file could not be read',
  'worker-failed': 'The trace reader stopped',
  internal: 'numascope failed to open this trace',
};

/** A failed load: what went wrong, in words, and what to do next. Never a blank page. */
export function ErrorView({ source, error, onFile }: { source: string; error: LoadFailure; onFile: (f: File) => void }) {
  return (
    <section className="error" role="alert" data-testid="error-view" data-error-code={error.code}>
      <h1 data-testid="error-title">{(TITLES as Record<string, string>)[error.code] ?? 'The trace could not be opened'}</h1>
      <p className="error__source">
        Source: <code data-testid="error-source">{source}</code>
      </p>
      <p className="error__message" data-testid="error-message">
        {error.message}
      </p>
      <p className="ns-muted">
        Error code: <code>{error.code}</code>
      </p>
      <div className="error__actions">
        <OpenFileButton onFile={onFile} label="Open another trace…" primary />
        <a href="./" className="button-link">
          Back to the sample traces
        </a>
      </div>
    </section>
  );
}
