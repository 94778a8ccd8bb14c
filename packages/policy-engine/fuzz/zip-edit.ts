/**
 * ZIP surgery for the mutator: a small writer that lays entries out exactly as asked (duplicate
 * names, `..` names, deflated tables, lying sizes and CRCs are all allowed here), and a finder of
 * the header fields a mutation can edit. Test code only: the reader never uses it.
 */
import { deflateSync, unzipSync } from 'fflate';
import { crc32 } from '../src/trace/crc32.js';

export interface RawEntry {
  name: string;
  data: Uint8Array;
  /** 0 stored, 8 deflate (the data is compressed here). */
  method: 0 | 8;
  /** Header values that lie (default: the true ones). */
  crc?: number;
  uncompressedSize?: number;
  compressedSize?: number;
  /** Set by the mutator once the data is damaged (nothing parses it again). */
  touched?: boolean;
}

const enc = new TextEncoder();

function put16(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
}

function put32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

/** A ZIP of `entries` in order; stored data starts 8-byte aligned (as the trace writers do). */
export function buildZip(entries: readonly RawEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = enc.encode(e.name);
    const body = e.method === 8 ? deflateSync(e.data) : e.data;
    const crc = e.crc ?? crc32(e.data);
    const usize = e.uncompressedSize ?? e.data.length;
    const csize = e.compressedSize ?? body.length;
    // Padding in an extra field (4 bytes of header at least) so that stored data starts 8-aligned.
    const pad = (8 - ((offset + 30 + name.length) % 8)) % 8;
    const extraLen = pad === 0 ? 0 : pad < 4 ? pad + 8 : pad;
    const local = new Uint8Array(30 + name.length + extraLen);
    put32(local, 0, 0x04034b50);
    put16(local, 4, 20);
    put16(local, 8, e.method);
    put32(local, 14, crc);
    put32(local, 18, csize);
    put32(local, 22, usize);
    put16(local, 26, name.length);
    put16(local, 28, extraLen);
    local.set(name, 30);
    if (extraLen >= 4) {
      put16(local, 30 + name.length, 0xa11e);
      put16(local, 32 + name.length, extraLen - 4);
    }
    const cd = new Uint8Array(46 + name.length);
    put32(cd, 0, 0x02014b50);
    put16(cd, 4, 20);
    put16(cd, 6, 20);
    put16(cd, 10, e.method);
    put32(cd, 16, crc);
    put32(cd, 20, csize);
    put32(cd, 24, usize);
    put16(cd, 28, name.length);
    put32(cd, 42, offset);
    cd.set(name, 46);
    parts.push(local, body);
    central.push(cd);
    offset += local.length + body.length;
  }
  const cdSize = central.reduce((n, c) => n + c.length, 0);
  const eocd = new Uint8Array(22);
  put32(eocd, 0, 0x06054b50);
  put16(eocd, 8, entries.length);
  put16(eocd, 10, entries.length);
  put32(eocd, 12, cdSize);
  put32(eocd, 16, offset);
  const out = new Uint8Array(offset + cdSize + 22);
  let at = 0;
  for (const p of [...parts, ...central, eocd]) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The entries of a (valid) trace, in file order. */
export function entriesOf(bytes: Uint8Array): RawEntry[] {
  const files = unzipSync(bytes);
  return Object.entries(files).map(([name, data]) => ({ name, data, method: name.endsWith('.json') ? 8 : 0 }));
}

/** Offsets of ZIP header records in the file, by kind (found by signature). */
export function headerOffsets(b: Uint8Array): { local: number[]; central: number[]; end: number[] } {
  const out = { local: [] as number[], central: [] as number[], end: [] as number[] };
  for (let i = 0; i + 4 <= b.length; i++) {
    if (b[i] !== 0x50 || b[i + 1] !== 0x4b) continue;
    const sig = b[i + 2]! | (b[i + 3]! << 8);
    if (sig === 0x0403) out.local.push(i);
    else if (sig === 0x0201) out.central.push(i);
    else if (sig === 0x0605) out.end.push(i);
  }
  return out;
}

/** Editable fields: [offset in the record, width in bytes, name]. */
export const LOCAL_FIELDS: ReadonlyArray<[number, 2 | 4, string]> = [
  [6, 2, 'flags'],
  [8, 2, 'method'],
  [14, 4, 'crc'],
  [18, 4, 'compressed size'],
  [22, 4, 'uncompressed size'],
  [26, 2, 'name length'],
  [28, 2, 'extra length'],
];
export const CENTRAL_FIELDS: ReadonlyArray<[number, 2 | 4, string]> = [
  [8, 2, 'flags'],
  [10, 2, 'method'],
  [16, 4, 'crc'],
  [20, 4, 'compressed size'],
  [24, 4, 'uncompressed size'],
  [28, 2, 'name length'],
  [30, 2, 'extra length'],
  [32, 2, 'comment length'],
  [34, 2, 'start disk'],
  [42, 4, 'local header offset'],
];
export const END_FIELDS: ReadonlyArray<[number, 2 | 4, string]> = [
  [4, 2, 'disk'],
  [6, 2, 'directory disk'],
  [8, 2, 'entries on disk'],
  [10, 2, 'entries'],
  [12, 4, 'directory size'],
  [16, 4, 'directory offset'],
  [20, 2, 'comment length'],
];

export function writeField(b: Uint8Array, at: number, width: 2 | 4, value: number): void {
  if (width === 2) put16(b, at, value);
  else put32(b, at, value);
}

export function readField(b: Uint8Array, at: number, width: 2 | 4): number {
  return width === 2 ? b[at]! | (b[at + 1]! << 8) : (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}
