/**
 * The single-file HTML report: a build of this app (dist/report.html, `vite build --mode report`)
 * with JS, CSS and the Worker inlined, and a trace embedded as base64 in
 * `<script type="application/octet-stream" id="numascope-report" data-name="NAME">`.
 * Opened from a file:// URL it needs no server: the app finds the embedded trace, opens it and
 * hides what needs one (Live, the sample list).
 */

export const REPORT_ELEMENT_ID = 'numascope-report';
/** Where the report shell lies beside the app (built into dist/). */
export const REPORT_SHELL_URL = 'report.html';

export interface EmbeddedTrace {
  name: string;
  /** The trace bytes, or null when the shell has no trace in it (report.html opened as built). */
  bytes: ArrayBuffer | null;
}

function element(doc: Document): HTMLScriptElement | null {
  const el = doc.getElementById(REPORT_ELEMENT_ID);
  return el instanceof HTMLScriptElement ? el : null;
}

/** True when this page is an HTML report (with or without its trace). */
export function isReport(doc: Document = document): boolean {
  return element(doc) !== null;
}

/** The trace embedded in this page, or null when the page is the normal app. Throws on a damaged payload. */
export function embeddedTrace(doc: Document = document): EmbeddedTrace | null {
  const el = element(doc);
  if (!el) return null;
  const text = (el.textContent ?? '').replace(/\s+/g, '');
  const name = el.dataset.name?.trim() || 'report.numascope';
  return { name, bytes: text ? fromBase64(text) : null };
}

/** The report shell's HTML with `bytes` embedded as trace `name`. */
export function buildReport(shell: string, bytes: ArrayBuffer, name: string): string {
  const doc = new DOMParser().parseFromString(shell, 'text/html');
  const el = element(doc);
  if (!el) throw new Error(`${REPORT_SHELL_URL} has no #${REPORT_ELEMENT_ID} element: it is not the numascope report shell (rebuild the web app)`);
  el.setAttribute('data-name', name);
  el.textContent = toBase64(new Uint8Array(bytes));
  return `<!doctype html>\n${doc.documentElement.outerHTML}\n`;
}

export function toBase64(bytes: Uint8Array): string {
  // btoa takes a binary string; built in chunks so a large trace does not overflow the call stack.
  let out = '';
  const chunk = 0x6000; // a multiple of 3, so chunks join without padding in between
  for (let i = 0; i < bytes.length; i += chunk) {
    out += btoa(String.fromCharCode(...bytes.subarray(i, i + chunk)));
  }
  return out;
}

export function fromBase64(text: string): ArrayBuffer {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    throw new Error('the trace embedded in this report is not valid base64: the file was damaged (ask for it again)');
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out.buffer;
}
