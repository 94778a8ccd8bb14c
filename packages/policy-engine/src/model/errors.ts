/** Why the engine could not replay a trace. Every message names the problem and what to do. */
export type EngineErrorCode = 'no-access-data' | 'bad-option' | 'bad-placement' | 'unknown-policy' | 'empty-trace' | 'estimate-unsupported' | 'internal';

export class EngineError extends Error {
  readonly code: EngineErrorCode;
  constructor(code: EngineErrorCode, message: string) {
    super(message);
    this.name = 'EngineError';
    this.code = code;
  }
}

export function isEngineError(e: unknown): e is EngineError {
  return e instanceof Error && e.name === 'EngineError' && typeof (e as EngineError).code === 'string';
}
