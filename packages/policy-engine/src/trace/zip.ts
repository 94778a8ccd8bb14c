/**
 * The trace's ZIP container, read with bounds checked before anything is allocated: the central
 * directory is parsed here (not by fflate's unzipSync, which trusts every size it reads and never
 * checks a CRC), every entry is located and checked against the file and the limits, and an entry
 * is only decompressed into output that cannot grow past the size its header declares. Every
 * entry read is checked against its CRC-32, stored entries too.
 *
 * Supported: what the format and common zip tools write — stored (0) and deflate (8) entries, data
 * descriptors, extra fields, an archive comment. Refused: ZIP64, encryption, split archives.
 */
import { Inflate } from 'fflate';
import { crc32 } from './crc32.js';
import { TraceError } from './errors.js';
import type { TraceLimits } from './limits.js';

const LOCAL_SIG = 0x04034b50;
const CENTRAL_SIG = 0x02014b50;
const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const EOCD_BYTES = 22;
const CENTRAL_BYTES = 46;
const LOCAL_BYTES = 30;
const MAX_COMMENT = 0xffff;
/** Slack on the deflate-ratio check, for entries of a few bytes. */
const DEFLATE_SLACK_BYTES = 1024;
/** Input fed to the inflater per step: at most 1032 times this comes out before the size is checked again. */
const INFLATE_STEP_BYTES = 16 * 1024;

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflate; anything else is refused when the entry is read. */
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  localOffset: number;
  /** The entry's (compressed) data: bytes [dataStart, dataEnd) of the file. */
  dataStart: number;
  dataEnd: number;
}

const u16 = (b: Uint8Array, i: number): number => b[i]! | (b[i + 1]! << 8);
const u32 = (b: Uint8Array, i: number): number => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
const hex = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/** True when the bytes start like a ZIP archive (a local header, or the end record of an empty one). */
export function looksLikeZip(b: Uint8Array): boolean {
  return b.length >= 4 && (u32(b, 0) === LOCAL_SIG || u32(b, 0) === EOCD_SIG);
}

function corrupt(what: string): TraceError {
  return new TraceError('zip-corrupt', `This trace's ZIP container is damaged: ${what}. The file was altered or cut short; fetch it again.`);
}

function unsupported(what: string): TraceError {
  return new TraceError(
    'zip-unsupported',
    `This trace's ZIP container uses ${what}, which numascope traces never use (the format: plain stored or deflated entries, no ZIP64, no encryption). ` +
      'If you re-packed the trace, pack it again with a plain `zip`, or open the original file.',
  );
}

/** Why a name may not be an entry name: an absolute path, a `..` segment, a backslash or a NUL. */
function unsafeName(name: string): string | null {
  if (name.length === 0) return 'an empty name';
  if (name.length > 1024) return 'a name of more than 1024 characters';
  if (name.includes('\0')) return 'a NUL character';
  if (name.includes('\\')) return 'a backslash';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'an absolute path';
  if (name.split('/').includes('..')) return 'a ".." path segment';
  return null;
}

/** Finds the end-of-central-directory record; returns its offset. */
function findEndRecord(b: Uint8Array): number {
  const stop = Math.max(0, b.length - EOCD_BYTES - MAX_COMMENT);
  let loose = -1;
  for (let i = b.length - EOCD_BYTES; i >= stop; i--) {
    if (u32(b, i) !== EOCD_SIG) continue;
    const end = i + EOCD_BYTES + u16(b, i + 20);
    if (end === b.length) return i;
    if (end < b.length && loose < 0) loose = i;
  }
  if (loose >= 0) return loose;
  throw new TraceError(
    'truncated',
    `This trace is truncated: the ZIP end-of-archive record is missing (the file has ${b.length} bytes). ` +
      'The download or copy was probably cut short; fetch the file again.',
  );
}

/**
 * Parses and checks the central directory and every local header: entry count, names, sizes and
 * offsets against the file, overlapping entries. Reads no entry data.
 */
export function readZipDirectory(b: Uint8Array, limits: TraceLimits): Map<string, ZipEntry> {
  const eocd = findEndRecord(b);
  if (eocd >= 20 && u32(b, eocd - 20) === ZIP64_LOCATOR_SIG) throw unsupported('ZIP64 (an archive over 4 GiB or 65535 entries)');
  const disk = u16(b, eocd + 4);
  const cdDisk = u16(b, eocd + 6);
  const entriesHere = u16(b, eocd + 8);
  const entries = u16(b, eocd + 10);
  const cdSize = u32(b, eocd + 12);
  const cdOffset = u32(b, eocd + 16);
  if (entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) throw unsupported('ZIP64 (an archive over 4 GiB or 65535 entries)');
  if (disk !== 0 || cdDisk !== 0 || entriesHere !== entries) throw unsupported('a split (multi-disk) archive');
  if (entries > limits.maxEntries) {
    throw new TraceError(
      'zip-limits',
      `This trace's ZIP declares ${entries} entries; a numascope trace has 9 and this reader accepts at most ${limits.maxEntries}. The file is not a trace or is damaged.`,
    );
  }
  if (cdOffset + cdSize > eocd) {
    throw corrupt(`the central directory (bytes ${cdOffset}–${cdOffset + cdSize}) runs past the end-of-archive record at byte ${eocd}`);
  }
  if (entries * CENTRAL_BYTES > cdSize) throw corrupt(`the central directory has ${cdSize} bytes, too few for the ${entries} entries it declares`);

  const out = new Map<string, ZipEntry>();
  const nameBytes: Uint8Array[] = [];
  const decoder = new TextDecoder('utf-8');
  const cdEnd = cdOffset + cdSize;
  let p = cdOffset;
  for (let k = 0; k < entries; k++) {
    if (p + CENTRAL_BYTES > cdEnd || u32(b, p) !== CENTRAL_SIG) throw corrupt(`central directory record ${k} (at byte ${p}) is missing or damaged`);
    const flags = u16(b, p + 8);
    const method = u16(b, p + 10);
    const crc = u32(b, p + 16);
    const compressedSize = u32(b, p + 20);
    const uncompressedSize = u32(b, p + 24);
    const nameLen = u16(b, p + 28);
    const extraLen = u16(b, p + 30);
    const commentLen = u16(b, p + 32);
    const startDisk = u16(b, p + 34);
    const localOffset = u32(b, p + 42);
    const next = p + CENTRAL_BYTES + nameLen + extraLen + commentLen;
    if (next > cdEnd) throw corrupt(`central directory record ${k} runs past the end of the directory`);
    const raw = b.subarray(p + CENTRAL_BYTES, p + CENTRAL_BYTES + nameLen);
    const name = decoder.decode(raw);
    const shown = name.length > 200 ? `${name.slice(0, 200)}…` : name;
    if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff || localOffset === 0xffffffff) throw unsupported(`ZIP64 sizes (entry "${shown}")`);
    if (startDisk !== 0) throw unsupported('a split (multi-disk) archive');
    const why = unsafeName(name);
    if (why) {
      throw new TraceError('zip-entry-name', `This trace's ZIP has an entry named ${JSON.stringify(shown)}, with ${why}; a numascope trace never has one. The file is not a trace or was tampered with.`);
    }
    if (out.has(name)) {
      throw new TraceError('zip-entry-name', `This trace's ZIP has two entries named "${shown}"; a reader could pick either. The file is damaged or was tampered with.`);
    }
    out.set(name, { name, method, flags, crc, compressedSize, uncompressedSize, localOffset, dataStart: 0, dataEnd: 0 });
    nameBytes.push(raw);
    p = next;
  }

  // Local headers: where each entry's data really starts.
  let k = 0;
  for (const e of out.values()) {
    const at = e.localOffset;
    if (at + LOCAL_BYTES > cdOffset || u32(b, at) !== LOCAL_SIG) throw corrupt(`entry "${e.name}" points at byte ${at}, where there is no local file header`);
    const nameLen = u16(b, at + 26);
    const extraLen = u16(b, at + 28);
    const raw = nameBytes[k++]!;
    if (nameLen !== raw.length || b.subarray(at + LOCAL_BYTES, at + LOCAL_BYTES + nameLen).some((c, i) => c !== raw[i])) {
      throw corrupt(`the local header of entry "${e.name}" names another entry`);
    }
    if (u16(b, at + 8) !== e.method) throw corrupt(`entry "${e.name}" has two different compression methods in its two headers`);
    e.dataStart = at + LOCAL_BYTES + nameLen + extraLen;
    e.dataEnd = e.dataStart + e.compressedSize;
    if (e.dataEnd > cdOffset) {
      if (e.dataEnd > b.length) {
        throw new TraceError('truncated', `This trace is truncated: entry "${e.name}" needs bytes up to ${e.dataEnd}, but the file has ${b.length}. Fetch the file again.`);
      }
      throw corrupt(`entry "${e.name}" (bytes ${e.dataStart}–${e.dataEnd}) runs into the central directory at byte ${cdOffset}`);
    }
    if (e.method === 0 && e.compressedSize !== e.uncompressedSize) {
      throw corrupt(`stored entry "${e.name}" declares ${e.compressedSize} bytes stored but ${e.uncompressedSize} bytes of content`);
    }
  }
  const byOffset = [...out.values()].sort((x, y) => x.localOffset - y.localOffset);
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1]!;
    const c = byOffset[i]!;
    if (a.dataEnd > c.localOffset) throw corrupt(`entries "${a.name}" and "${c.name}" overlap (one archive byte would be read twice)`);
  }
  return out;
}

/** Running total of bytes read out of the archive, against limits.maxTotalBytes. */
export interface ZipBudget {
  bytesRead: number;
}

/**
 * The uncompressed bytes of one entry, checked against its CRC-32. A stored entry is a view into
 * `b` when it is 8-byte aligned there (Arrow views its columns in place), else a copy.
 */
export function readZipEntry(b: Uint8Array, e: ZipEntry, limits: TraceLimits, budget: ZipBudget, maxBytes = limits.maxEntryBytes): Uint8Array {
  if (e.flags & 0x41) throw unsupported(`encryption (entry "${e.name}")`);
  if (e.method !== 0 && e.method !== 8) throw unsupported(`compression method ${e.method} (entry "${e.name}")`);
  if (e.uncompressedSize > maxBytes) {
    throw new TraceError(
      'zip-limits',
      `Entry "${e.name}" declares ${e.uncompressedSize} bytes, more than the ${maxBytes} this reader accepts for it. ` +
        'The file is damaged, or was made to exhaust memory; it is not opened.',
    );
  }
  if (budget.bytesRead + e.uncompressedSize > limits.maxTotalBytes) {
    throw new TraceError(
      'zip-limits',
      `This trace's entries declare more than ${limits.maxTotalBytes} bytes together (at entry "${e.name}"), more than this reader accepts. ` +
        'The file is damaged, or too large to open here.',
    );
  }
  if (e.method === 8 && e.uncompressedSize > e.compressedSize * limits.maxDeflateRatio + DEFLATE_SLACK_BYTES) {
    throw new TraceError(
      'zip-limits',
      `Entry "${e.name}" declares ${e.uncompressedSize} bytes from ${e.compressedSize} deflated bytes, more than deflate can produce ` +
        `(at most ${limits.maxDeflateRatio}:1). The header is damaged, or was made to exhaust memory; the file is not opened.`,
    );
  }
  budget.bytesRead += e.uncompressedSize;
  let data: Uint8Array;
  if (e.method === 0) {
    data = b.subarray(e.dataStart, e.dataEnd);
    if ((b.byteOffset + e.dataStart) % 8 !== 0) data = data.slice();
  } else {
    data = inflateBounded(b.subarray(e.dataStart, e.dataEnd), e);
  }
  const actual = crc32(data);
  if (actual !== e.crc) {
    throw new TraceError(
      'zip-crc',
      `Entry "${e.name}" of this trace is damaged: its bytes do not match the CRC-32 in the ZIP header (header ${hex(e.crc)}, content ${hex(actual)}). ` +
        'The file was altered or corrupted in transit; fetch it again.',
    );
  }
  return data;
}

/** Inflates into output that never grows past the declared size; a stream that would is refused. */
function inflateBounded(input: Uint8Array, e: ZipEntry): Uint8Array {
  const declared = e.uncompressedSize;
  let out = new Uint8Array(Math.min(declared, 1 << 16));
  let size = 0;
  const inflater = new Inflate((chunk: Uint8Array) => {
    if (size + chunk.length > declared) throw corrupt(`entry "${e.name}" inflates to more than the ${declared} bytes its header declares`);
    if (size + chunk.length > out.length) {
      const grown = new Uint8Array(Math.min(declared, Math.max(out.length * 2, size + chunk.length)));
      grown.set(out.subarray(0, size));
      out = grown;
    }
    out.set(chunk, size);
    size += chunk.length;
  });
  try {
    if (input.length === 0) inflater.push(input, true);
    for (let at = 0; at < input.length; at += INFLATE_STEP_BYTES) {
      const end = Math.min(input.length, at + INFLATE_STEP_BYTES);
      inflater.push(input.subarray(at, end), end === input.length);
    }
  } catch (err) {
    if (err instanceof TraceError) throw err;
    throw corrupt(`entry "${e.name}" is not a valid deflate stream (${(err as Error).message})`);
  }
  if (size !== declared) throw corrupt(`entry "${e.name}" inflates to ${size} bytes, but its header declares ${declared}`);
  return out.length === size ? out : out.subarray(0, size);
}
