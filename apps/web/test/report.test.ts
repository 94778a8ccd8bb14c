// @vitest-environment jsdom
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildReport, embeddedTrace, fromBase64, isReport, toBase64 } from '../src/ui/report';

const shell = readFileSync(path.join(import.meta.dirname, '../report.html'), 'utf8');

function parse(html: string): Document {
  return new DOMParser().parseFromString(html, 'text/html');
}

describe('HTML report', () => {
  it('embeds the trace bytes and reads them back unchanged', () => {
    // Over one base64 chunk (0x6000 bytes), every byte value.
    const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256);
    const html = buildReport(shell, bytes.buffer, 'a "quoted" <name>.numascope');
    const doc = parse(html);
    expect(isReport(doc)).toBe(true);
    const got = embeddedTrace(doc)!;
    expect(got.name).toBe('a "quoted" <name>.numascope');
    expect(new Uint8Array(got.bytes!)).toEqual(bytes);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('the empty shell is a report without a trace; the app page is no report', () => {
    expect(embeddedTrace(parse(shell))).toEqual({ name: 'report.numascope', bytes: null });
    expect(isReport(parse('<!doctype html><div id="root"></div>'))).toBe(false);
    expect(embeddedTrace(parse('<!doctype html><div id="root"></div>'))).toBeNull();
  });

  it('refuses a page that is not the shell, and a damaged payload, with what to do', () => {
    expect(() => buildReport('<!doctype html><p>404</p>', new ArrayBuffer(4), 'x')).toThrow(/not the numascope report shell \(rebuild the web app\)/);
    expect(() => fromBase64('@@not base64@@')).toThrow(/not valid base64: the file was damaged/);
  });

  it('base64 matches the platform encoder', () => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 251);
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
  });
});
