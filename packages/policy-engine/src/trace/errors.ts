/** Why a trace could not be opened. Every code has a message that names the problem and what to do. */
export type TraceErrorCode =
  | 'not-zip'
  | 'truncated'
  | 'manifest-missing'
  | 'manifest-invalid'
  | 'wrong-format'
  | 'too-new'
  | 'table-missing'
  | 'column-missing'
  | 'column-type'
  | 'table-corrupt';

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
