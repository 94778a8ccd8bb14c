/** Getting a trace's bytes on the UI thread: from a URL (with download progress) or a picked or dropped file. */
import { LoadError } from '../worker/protocol';

export interface Progress {
  loadedBytes: number;
  /** From Content-Length; null when the server does not say. */
  totalBytes: number | null;
}

/**
 * Downloads a trace, reporting progress. HTTP failures and network errors become LoadErrors
 * whose message names the URL and the status.
 */
export async function fetchTraceBytes(
  url: string,
  onProgress: (p: Progress) => void,
  signal?: AbortSignal,
): Promise<ArrayBuffer> {
  const resolved = resolveUrl(url);
  const shown = resolved === url ? `"${url}"` : `"${url}" (${resolved})`;
  let response: Response;
  try {
    response = await fetch(resolved, signal ? { signal } : {});
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new LoadError(
      'fetch-failed',
      `Could not fetch ${shown}: ${(e as Error).message}. Check the address and that the server is reachable; ` +
        'a trace on another site must be served with CORS headers that allow this page.',
    );
  }
  if (!response.ok) {
    throw new LoadError(
      'http',
      `Could not load ${shown}: the server answered HTTP ${response.status}${response.statusText ? ' ' + response.statusText : ''}.` +
        (response.status === 404 ? ' Check the file name in the ?trace= address.' : ''),
    );
  }
  const header = response.headers.get('content-length');
  const totalBytes = header !== null && /^\d+$/.test(header) ? Number(header) : null;
  if (!response.body) {
    const buf = await response.arrayBuffer();
    onProgress({ loadedBytes: buf.byteLength, totalBytes });
    return buf;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let loadedBytes = 0;
  onProgress({ loadedBytes, totalBytes });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loadedBytes += value.byteLength;
    onProgress({ loadedBytes, totalBytes });
  }
  const out = new Uint8Array(loadedBytes);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out.buffer;
}

export function resolveUrl(url: string): string {
  try {
    return new URL(url, document.baseURI).href;
  } catch {
    return url;
  }
}

/** Reads a picked or dropped file. */
export async function readFileBytes(file: File): Promise<ArrayBuffer> {
  try {
    return await file.arrayBuffer();
  } catch (e) {
    throw new LoadError('read-failed', `Could not read "${file.name}": ${(e as Error).message}.`);
  }
}
