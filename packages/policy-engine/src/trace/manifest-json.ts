/**
 * manifest.json from its bytes, with its size and nesting bounded before JSON.parse runs: a deeply
 * nested manifest would parse, but every recursive step after it (validation, structured clone to
 * the UI, JSON output) could overflow the stack.
 */
import { TraceError } from './errors.js';
import type { TraceLimits } from './limits.js';

const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Deepest nesting of arrays and objects in JSON text (strings skipped); stops counting past `limit`. */
export function jsonDepth(bytes: Uint8Array, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return deepest;
}

export function parseManifestJson(bytes: Uint8Array, limits: TraceLimits): unknown {
  if (bytes.length > limits.maxManifestBytes) {
    throw new TraceError('manifest-limits', `manifest.json has ${bytes.length} bytes, more than the ${limits.maxManifestBytes} this reader accepts. The file is damaged or not a trace.`);
  }
  const depth = jsonDepth(bytes, limits.maxManifestDepth);
  if (depth > limits.maxManifestDepth) {
    throw new TraceError(
      'manifest-limits',
      `manifest.json nests arrays and objects more than ${limits.maxManifestDepth} levels deep; a numascope manifest needs fewer than 10. The file is damaged or was made to exhaust the reader.`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new TraceError('manifest-invalid', 'manifest.json is not valid UTF-8 text. The file is damaged; fetch it again.');
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TraceError('manifest-invalid', `manifest.json is not valid JSON: ${(e as Error).message}.`);
  }
}
