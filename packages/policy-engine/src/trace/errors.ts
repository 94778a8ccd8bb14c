/**
 * Why a trace could not be opened. Every code has a message that names the problem and what to do
 * (docs/robustness.md lists what each check covers).
 */
export type TraceErrorCode =
  | 'not-zip'
  | 'truncated'
  /** The ZIP's headers contradict each other or the file (offsets outside it, overlapping entries, a damaged deflate stream). */
  | 'zip-corrupt'
  /** A ZIP feature the format does not use: ZIP64, encryption, split archives, a compression method other than stored/deflate. */
  | 'zip-unsupported'
  /** Too many entries, or an entry that declares more bytes than the limits (or than deflate can produce from its data). */
  | 'zip-limits'
  /** An entry's bytes do not match the CRC-32 its header declares. */
  | 'zip-crc'
  /** Two entries with one name, or a name that is a path outside the archive (`..`, absolute). */
  | 'zip-entry-name'
  | 'manifest-missing'
  /** manifest.json is larger or more deeply nested than the limits. */
  | 'manifest-limits'
  | 'manifest-invalid'
  | 'wrong-format'
  | 'too-new'
  | 'table-missing'
  | 'column-missing'
  | 'column-type'
  /** A null in a column the format says is never null. */
  | 'column-null'
  | 'table-corrupt'
  /** More rows, columns, record batches or string bytes than the limits. */
  | 'table-limits'
  /** A row index, dictionary code, node id or cpu id that points outside its table, dictionary or machine. */
  | 'index-out-of-range';

export class TraceError extends Error {
  readonly code: TraceErrorCode;
  constructor(code: TraceErrorCode, message: string) {
    super(message);
    this.name = 'TraceError';
    this.code = code;
  }
}

export function isTraceError(e: unknown): e is TraceError {
  return e instanceof Error && (e as TraceError).name === 'TraceError' && typeof (e as TraceError).code === 'string';
}
