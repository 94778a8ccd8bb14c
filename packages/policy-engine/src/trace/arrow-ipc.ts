/**
 * Checks an Arrow IPC file's metadata before apache-arrow decodes it. apache-arrow reads
 * flatbuffers without bounds checks (a read past the end gives 0, not an error), trusts every
 * vector length and row count it finds, and allocates by them (a record batch whose columns are
 * shorter than its declared length gets a null bitmap of the declared length). A damaged or
 * hostile file could make it loop for billions of steps or allocate gigabytes. So every position,
 * vector, string, block, row count and buffer it will use is checked here first, with a
 * bounds-checked flatbuffer reader, against the file's own size and the limits; and only the flat
 * column types the format uses, or an equivalent layout of them, are let through (Int,
 * FloatingPoint, Utf8, LargeUtf8, Utf8View with its views bounds-checked, and dictionaries of them): no nested types, no big-endian data.
 *
 * Body compression: ZSTD only (what the writers use, docs/trace-format.md, "Size on disk"). Each
 * compressed buffer is an int64 decompressed length, then one ZSTD frame (or the bytes as they
 * are, length -1). Before anything is decompressed, every frame is walked here: it must be one
 * frame, without a dictionary, whose header states its content size, equal to the length the
 * buffer declares, ending where the buffer ends; those lengths are what the column checks below
 * use, and a table's decompressed buffers together may hold at most `limits.maxEntryBytes` (what
 * a stored table may). The decoder (`zstd.ts`) then allocates exactly the checked size.
 *
 * Layout (Arrow columnar format, "IPC File Format"): `ARROW1\0\0`, messages, footer flatbuffer,
 * int32 footer length, `ARROW1`. A message is [0xFFFFFFFF] int32 length, Message flatbuffer, body.
 */
import type { TraceLimits } from './limits.js';

/** Thrown for anything wrong in the metadata; the reader turns it into a TraceError naming the table. */
export class ArrowMetadataError extends Error {
  constructor(
    message: string,
    readonly limit = false,
  ) {
    super(message);
    this.name = 'ArrowMetadataError';
  }
}

const MAGIC = [0x41, 0x52, 0x52, 0x4f, 0x57, 0x31]; // "ARROW1"
const TWO_POW_32 = 2 ** 32;

// Type union tags (Schema.fbs) and the ones the format may use.
const TYPE_INT = 2;
const TYPE_FLOAT = 3;
const TYPE_UTF8 = 5;
const TYPE_LARGE_UTF8 = 20;
/** Utf8View (Arrow 1.4+, what polars writes): 16-byte views into variadic data buffers. */
const TYPE_UTF8_VIEW = 24;
/** CompressionType ZSTD (Message.fbs: LZ4_FRAME = 0, ZSTD = 1). */
const COMPRESSION_ZSTD = 1;
const ZSTD_MAGIC = 0xfd2fb528;
/** Largest ZSTD block (RFC 8878, Block_Maximum_Size). */
const ZSTD_MAX_BLOCK = 128 * 1024;
/** MetadataVersion V4 (Schema.fbs: V1 = 0 … V5 = 4). */
const METADATA_V4 = 3;
// MessageHeader union tags (Message.fbs).
const HEADER_DICTIONARY_BATCH = 2;
const HEADER_RECORD_BATCH = 3;

/** A flatbuffer region with every read bounds-checked (positions are relative to `b`). */
class Flat {
  constructor(
    readonly b: Uint8Array,
    readonly what: string,
  ) {}
  private need(pos: number, size: number): void {
    if (!(pos >= 0 && pos + size <= this.b.length)) throw new ArrowMetadataError(`${this.what}: a reference points outside its ${this.b.length} bytes`);
  }
  u8(p: number): number {
    this.need(p, 1);
    return this.b[p]!;
  }
  u16(p: number): number {
    this.need(p, 2);
    return this.b[p]! | (this.b[p + 1]! << 8);
  }
  i32(p: number): number {
    this.need(p, 4);
    return this.b[p]! | (this.b[p + 1]! << 8) | (this.b[p + 2]! << 16) | (this.b[p + 3]! << 24);
  }
  u32(p: number): number {
    return this.i32(p) >>> 0;
  }
  /** A non-negative int64 below 2^53, else an error naming `field`. */
  u53(p: number, field: string): number {
    const lo = this.u32(p);
    const hi = this.i32(p + 4);
    if (hi < 0 || hi >= 2 ** 21) throw new ArrowMetadataError(`${this.what}: ${field} is ${hi < 0 ? 'negative' : 'beyond 2^53'}`);
    return hi * TWO_POW_32 + lo;
  }
  /** The table at `pos`: its position and vtable. */
  table(pos: number): FlatTable {
    const vt = pos - this.i32(pos);
    const vtLen = this.u16(vt);
    const objLen = this.u16(vt + 2);
    if (vtLen < 4 || vtLen % 2 !== 0) throw new ArrowMetadataError(`${this.what}: a damaged flatbuffer vtable`);
    this.need(vt, vtLen);
    this.need(pos, Math.max(4, objLen));
    return { pos, vt, vtLen, objLen };
  }
  root(): FlatTable {
    return this.table(this.u32(0));
  }
  /** Position of field `i` of `t`, or 0 when absent. */
  field(t: FlatTable, i: number, size: number): number {
    const slot = 4 + 2 * i;
    if (slot + 2 > t.vtLen) return 0;
    const off = this.u16(t.vt + slot);
    if (off === 0) return 0;
    if (off + size > t.objLen) throw new ArrowMetadataError(`${this.what}: a flatbuffer field lies outside its table`);
    return t.pos + off;
  }
  /** Follows the uoffset at `p` (to a table, vector or string). */
  ref(p: number): number {
    return p + this.u32(p);
  }
  /** Vector field `i` of `t` with elements of `size` bytes: [start, length], or null when absent. */
  vector(t: FlatTable, i: number, size: number): [number, number] | null {
    const f = this.field(t, i, 4);
    if (!f) return null;
    const v = this.ref(f);
    const n = this.u32(v);
    if (n * size > this.b.length) throw new ArrowMetadataError(`${this.what}: a vector declares ${n} elements, more than its ${this.b.length} bytes hold`);
    this.need(v + 4, n * size);
    return [v + 4, n];
  }
  /** Table field `i` of `t`, or null. */
  child(t: FlatTable, i: number): FlatTable | null {
    const f = this.field(t, i, 4);
    return f ? this.table(this.ref(f)) : null;
  }
  /** String field `i` of `t` (checked, not decoded); its byte length, or -1 when absent. */
  stringLength(t: FlatTable, i: number): number {
    const f = this.field(t, i, 4);
    if (!f) return -1;
    const s = this.ref(f);
    const n = this.u32(s);
    this.need(s + 4, n);
    return n;
  }
  /** Every element of a vector of tables. */
  tables(t: FlatTable, i: number): FlatTable[] {
    const v = this.vector(t, i, 4);
    if (!v) return [];
    const out: FlatTable[] = [];
    for (let k = 0; k < v[1]; k++) out.push(this.table(this.ref(v[0] + 4 * k)));
    return out;
  }
}

interface FlatTable {
  pos: number;
  vt: number;
  vtLen: number;
  objLen: number;
}

/** What one column (schema field) needs in a batch: its buffers and the bytes per row of each. */
interface ColumnLayout {
  name: string;
  /** Physical layout of the column in record batches (the index type for a dictionary column). */
  kind: 'fixed' | 'utf8' | 'large-utf8' | 'utf8-view';
  width: number;
  /** Dictionary id, and the layout of the dictionary's values. */
  dictionary: { id: number; kind: 'fixed' | 'utf8' | 'large-utf8' | 'utf8-view'; width: number } | null;
}

const INT_WIDTHS = new Set([8, 16, 32, 64]);

/** Layout of a field's type (Int, FloatingPoint, Utf8, LargeUtf8), or an error naming it. */
function typeLayout(fb: Flat, field: FlatTable, name: string): { kind: ColumnLayout['kind']; width: number } {
  const tag = fb.field(field, 2, 1) ? fb.u8(fb.field(field, 2, 1)) : 0;
  const type = fb.child(field, 3);
  if (tag === TYPE_INT) {
    const bits = type && fb.field(type, 0, 4) ? fb.i32(fb.field(type, 0, 4)) : 0;
    if (!INT_WIDTHS.has(bits)) throw new ArrowMetadataError(`column "${name}" is an integer of ${bits} bits`);
    return { kind: 'fixed', width: bits / 8 };
  }
  if (tag === TYPE_FLOAT) {
    const precision = type && fb.field(type, 0, 2) ? fb.u16(fb.field(type, 0, 2)) : 0;
    if (precision > 2) throw new ArrowMetadataError(`column "${name}" has an unknown floating-point precision ${precision}`);
    return { kind: 'fixed', width: [2, 4, 8][precision]! };
  }
  if (tag === TYPE_UTF8) return { kind: 'utf8', width: 4 };
  if (tag === TYPE_LARGE_UTF8) return { kind: 'large-utf8', width: 8 };
  if (tag === TYPE_UTF8_VIEW) return { kind: 'utf8-view', width: 16 };
  throw new ArrowMetadataError(`column "${name}" has Arrow type tag ${tag}; the trace format uses only integer, floating-point, utf8 (plain, large or view) and dictionary columns`);
}

function checkKeyValues(fb: Flat, t: FlatTable, i: number): void {
  for (const kv of fb.tables(t, i)) {
    fb.stringLength(kv, 0);
    fb.stringLength(kv, 1);
  }
}

function readSchema(fb: Flat, schema: FlatTable, limits: TraceLimits): ColumnLayout[] {
  const endianness = fb.field(schema, 0, 2) ? fb.u16(fb.field(schema, 0, 2)) : 0;
  if (endianness !== 0) throw new ArrowMetadataError('the table is big-endian; the trace format is little-endian');
  checkKeyValues(fb, schema, 2);
  fb.vector(schema, 3, 8);
  const fields = fb.tables(schema, 1);
  if (fields.length > limits.maxColumns) throw new ArrowMetadataError(`the table has ${fields.length} columns, more than the ${limits.maxColumns} this reader accepts`, true);
  const decoder = new TextDecoder('utf-8');
  return fields.map((field, k) => {
    const nameLength = fb.stringLength(field, 0);
    const at = nameLength >= 0 ? fb.ref(fb.field(field, 0, 4)) + 4 : 0;
    const name = nameLength > 256 ? `#${k}` : nameLength >= 0 ? decoder.decode(fb.b.subarray(at, at + nameLength)) : `#${k}`;
    checkKeyValues(fb, field, 6);
    const children = fb.vector(field, 5, 4);
    if (children && children[1] > 0) throw new ArrowMetadataError(`column "${name}" is a nested type; the trace format has only flat columns`);
    const value = typeLayout(fb, field, name);
    const enc = fb.child(field, 4);
    if (!enc) return { name, ...value, dictionary: null };
    const id = fb.field(enc, 0, 8) ? fb.u53(fb.field(enc, 0, 8), `the dictionary id of column "${name}"`) : 0;
    const indexType = fb.child(enc, 1);
    let bits = 32;
    if (indexType) {
      bits = fb.field(indexType, 0, 4) ? fb.i32(fb.field(indexType, 0, 4)) : 0;
      if (!INT_WIDTHS.has(bits)) throw new ArrowMetadataError(`dictionary column "${name}" has ${bits}-bit indices`);
    }
    return { name, kind: 'fixed', width: bits / 8, dictionary: { id, ...value } };
  });
}

interface Block {
  offset: number;
  bodyLength: number;
}

function readBlocks(fb: Flat, footer: FlatTable, i: number, what: string): Block[] {
  const v = fb.vector(footer, i, 24);
  if (!v) return [];
  const out: Block[] = [];
  for (let k = 0; k < v[1]; k++) {
    const p = v[0] + 24 * k;
    out.push({ offset: fb.u53(p, `${what} ${k} offset`), bodyLength: fb.u53(p + 16, `${what} ${k} body length`) });
  }
  return out;
}

/**
 * Checks one record batch (of a table, or a dictionary's values) against its columns: one node per
 * column, each as long as the batch, with the buffers that length needs, inside the body.
 */
function checkBatch(
  fb: Flat,
  batch: FlatTable,
  columns: Array<{ name: string; kind: ColumnLayout['kind']; width: number }>,
  body: Uint8Array,
  limits: TraceLimits,
  what: string,
  budget: { bytes: number },
): number {
  const bodyLength = body.length;
  const length = fb.field(batch, 0, 8) ? fb.u53(fb.field(batch, 0, 8), `${what} length`) : 0;
  if (length > limits.maxTableRows) throw new ArrowMetadataError(`${what} declares ${length} rows, more than the ${limits.maxTableRows} this reader accepts`, true);
  const compression = fb.child(batch, 3);
  if (compression) {
    const codec = fb.field(compression, 0, 1) ? fb.u8(fb.field(compression, 0, 1)) : 0;
    const method = fb.field(compression, 1, 1) ? fb.u8(fb.field(compression, 1, 1)) : 0;
    if (codec !== COMPRESSION_ZSTD) throw new ArrowMetadataError(`${what} is compressed with ${codec === 0 ? 'LZ4_FRAME' : `codec ${codec}`}; numascope reads ZSTD-compressed or uncompressed Arrow bodies`);
    if (method !== 0) throw new ArrowMetadataError(`${what} has body compression method ${method}; Arrow defines only BUFFER (0)`);
    if (columns.some((c) => c.kind === 'utf8-view')) throw new ArrowMetadataError(`${what} has compressed string-view columns, which this reader cannot check before decoding; write them uncompressed or as utf8`);
  }
  // One variadic buffer count per string-view column, in column order (Message.fbs).
  const variadic = fb.vector(batch, 4, 8) ?? [0, 0];
  const views = columns.filter((c) => c.kind === 'utf8-view').length;
  if (variadic[1] !== views) throw new ArrowMetadataError(`${what} has ${variadic[1]} variadic buffer counts for ${views} string-view columns`);
  const counts: number[] = [];
  for (let k = 0; k < variadic[1]; k++) counts.push(fb.u53(variadic[0] + 8 * k, `${what} variadic buffer count ${k}`));
  const nodes = fb.vector(batch, 1, 16) ?? [0, 0];
  const buffers = fb.vector(batch, 2, 16) ?? [0, 0];
  if (nodes[1] !== columns.length) throw new ArrowMetadataError(`${what} has ${nodes[1]} column nodes for ${columns.length} columns`);
  let view = 0;
  const wanted = columns.reduce((n, c) => n + (c.kind === 'fixed' ? 2 : c.kind === 'utf8-view' ? 2 + counts[view++]! : 3), 0);
  view = 0;
  if (buffers[1] !== wanted) throw new ArrowMetadataError(`${what} has ${buffers[1]} buffers where its columns need ${wanted}`);
  let b = 0;
  const buffer = (): [number, number] => {
    const p = buffers[0] + 16 * b++;
    const offset = fb.u53(p, `${what} buffer offset`);
    const size = fb.u53(p + 8, `${what} buffer length`);
    if (offset + size > bodyLength) throw new ArrowMetadataError(`${what}: a buffer (bytes ${offset}–${offset + size}) lies outside the ${bodyLength}-byte body`);
    if (offset % 8 !== 0) throw new ArrowMetadataError(`${what}: a buffer starts at byte ${offset}, not on the 8-byte boundary Arrow requires`);
    if (!compression || size === 0) return [offset, size];
    return [offset, checkCompressedBuffer(body.subarray(offset, offset + size), `${what}, buffer ${b - 1}`, budget, limits)];
  };
  columns.forEach((c, k) => {
    const p = nodes[0] + 16 * k;
    const n = fb.u53(p, `${what} column "${c.name}" length`);
    const nulls = fb.u53(p + 8, `${what} column "${c.name}" null count`);
    if (n !== length) throw new ArrowMetadataError(`${what}: column "${c.name}" has ${n} rows, the batch ${length}`);
    if (nulls > n) throw new ArrowMetadataError(`${what}: column "${c.name}" declares ${nulls} nulls in ${n} rows`);
    const [, validity] = buffer();
    if (nulls > 0 && validity < Math.ceil(n / 8)) throw new ArrowMetadataError(`${what}: column "${c.name}" has a ${validity}-byte null bitmap for ${n} rows`);
    if (c.kind === 'fixed') {
      const [, data] = buffer();
      if (data < n * c.width) throw new ArrowMetadataError(`${what}: column "${c.name}" has ${data} bytes of values for ${n} rows of ${c.width} bytes`);
    } else if (c.kind === 'utf8-view') {
      const [viewsAt, viewBytes] = buffer();
      if (viewBytes < n * 16) throw new ArrowMetadataError(`${what}: column "${c.name}" has ${viewBytes} bytes of string views for ${n} rows of 16 bytes`);
      const data: number[] = [];
      for (let k = counts[view++]!; k > 0; k--) data.push(buffer()[1]);
      checkViews(body, viewsAt, n, data, limits, `${what}: column "${c.name}"`);
    } else {
      const [, offsets] = buffer();
      if (n > 0 && offsets < (n + 1) * c.width) throw new ArrowMetadataError(`${what}: column "${c.name}" has ${offsets} bytes of string offsets for ${n} rows`);
      buffer();
    }
  });
  return length;
}

/**
 * One compressed buffer (see the module comment): its decompressed length, after checking that
 * it is the length its ZSTD frame states and that the frame is whole and alone.
 */
function checkCompressedBuffer(buffer: Uint8Array, what: string, budget: { bytes: number }, limits: TraceLimits): number {
  if (buffer.length < 8) throw new ArrowMetadataError(`${what} is ${buffer.length} bytes, too short for its decompressed length`);
  const dv = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
  const lo = dv.getUint32(0, true);
  const hi = dv.getInt32(4, true);
  if (hi === -1 && lo === 0xffffffff) {
    budget.bytes += buffer.length - 8;
    return buffer.length - 8; // stored as it is
  }
  if (hi < 0 || hi >= 2 ** 21) throw new ArrowMetadataError(`${what} declares a decompressed length of ${hi < 0 ? 'less than 0' : 'more than 2^53'}`);
  const declared = hi * TWO_POW_32 + lo;
  budget.bytes += declared;
  if (budget.bytes > limits.maxEntryBytes) throw new ArrowMetadataError(`${what}: the table's compressed buffers decompress to more than the ${limits.maxEntryBytes} bytes a table may hold`, true);
  const frame = buffer.subarray(8);
  if (declared === 0 && frame.length === 0) return 0;
  const size = zstdFrameSize(frame, `${what}'s ZSTD frame`);
  if (size !== declared) throw new ArrowMetadataError(`${what}: its ZSTD frame holds ${size} bytes, its Arrow buffer says ${declared}`);
  return declared;
}

/**
 * Walks one ZSTD frame (RFC 8878, 3.1.1) without decoding it: its header must state the content
 * size and name no dictionary, its blocks must lie inside `frame` and the frame must end where
 * `frame` does. Returns the content size.
 */
export function zstdFrameSize(frame: Uint8Array, what: string): number {
  const short = (): never => {
    throw new ArrowMetadataError(`${what} ends early`);
  };
  if (frame.length < 6) short();
  if ((frame[0]! | (frame[1]! << 8) | (frame[2]! << 16) | (frame[3]! << 24)) >>> 0 !== ZSTD_MAGIC) throw new ArrowMetadataError(`${what} does not start with the ZSTD magic number`);
  const fhd = frame[4]!;
  const single = (fhd >> 5) & 1;
  const fcsCode = fhd >> 6;
  if (fhd & 0x08) throw new ArrowMetadataError(`${what} has a reserved header bit set`);
  if (fhd & 3) throw new ArrowMetadataError(`${what} needs a dictionary`);
  if (!single && fcsCode === 0) throw new ArrowMetadataError(`${what} does not state its content size`);
  const fcsBytes = fcsCode === 0 ? 1 : 1 << fcsCode;
  let p = 5 + (single ? 0 : 1);
  if (p + fcsBytes > frame.length) short();
  let size = 0;
  for (let k = fcsBytes - 1; k >= 0; k--) size = size * 256 + frame[p + k]!;
  if (fcsBytes === 8 && size >= 2 ** 53) throw new ArrowMetadataError(`${what} states a content size beyond 2^53`);
  if (fcsBytes === 2) size += 256;
  p += fcsBytes;
  const checksum = (fhd >> 2) & 1;
  for (;;) {
    if (p + 3 > frame.length) short();
    const header = frame[p]! | (frame[p + 1]! << 8) | (frame[p + 2]! << 16);
    p += 3;
    const type = (header >> 1) & 3;
    const blockSize = header >>> 3;
    if (type === 3) throw new ArrowMetadataError(`${what} has a block of the reserved type`);
    if (blockSize > ZSTD_MAX_BLOCK) throw new ArrowMetadataError(`${what} has a block of ${blockSize} bytes, more than ZSTD's ${ZSTD_MAX_BLOCK}`);
    p += type === 1 ? 1 : blockSize;
    if (p > frame.length) short();
    if (header & 1) break;
  }
  p += checksum * 4;
  if (p > frame.length) short();
  if (p !== frame.length) throw new ArrowMetadataError(`${what} is followed by ${frame.length - p} more bytes`);
  return size;
}

/**
 * Every string view of a column: a length, then up to 12 bytes inline, or a prefix, a data buffer
 * index and an offset (Arrow columnar format, "Variable-size Binary View Layout"); the bytes it
 * names must lie inside that buffer. Nulls' views are checked too (writers zero them).
 */
function checkViews(body: Uint8Array, at: number, rows: number, dataSizes: number[], limits: TraceLimits, what: string): void {
  const dv = new DataView(body.buffer, body.byteOffset + at, rows * 16);
  for (let i = 0; i < rows; i++) {
    const length = dv.getInt32(16 * i, true);
    if (length < 0) throw new ArrowMetadataError(`${what}, row ${i}: a string view of length ${length}`);
    if (length > limits.maxStringBytes) throw new ArrowMetadataError(`${what}, row ${i}: a string of ${length} bytes, more than the ${limits.maxStringBytes} this reader accepts for one value`, true);
    if (length <= 12) continue;
    const index = dv.getInt32(16 * i + 8, true);
    const offset = dv.getInt32(16 * i + 12, true);
    if (!(index >= 0 && index < dataSizes.length) || offset < 0 || offset + length > dataSizes[index]!) {
      throw new ArrowMetadataError(`${what}, row ${i}: a string view points outside its data buffers (buffer ${index}, bytes ${offset}–${offset + length})`);
    }
  }
}

/** The message at `offset`: its Message table and where its body starts, inside [8, end). */
function readMessage(file: Uint8Array, block: Block, end: number, what: string): { fb: Flat; message: FlatTable; bodyStart: number; bodyLength: number } {
  const outer = new Flat(file.subarray(0, end), what);
  let p = block.offset;
  if (p < 8) throw new ArrowMetadataError(`${what} starts at byte ${p}, inside the file's magic`);
  let length = outer.i32(p);
  p += 4;
  if (length === -1) {
    length = outer.i32(p);
    p += 4;
  }
  if (length <= 0 || p + length > end) throw new ArrowMetadataError(`${what} has a metadata length of ${length} at byte ${p}`);
  const fb = new Flat(file.subarray(p, p + length), what);
  const message = fb.root();
  // apache-arrow reads the buffers of a pre-V4 message at other positions than the ones checked here.
  const version = fb.field(message, 0, 2) ? fb.u16(fb.field(message, 0, 2)) : 0;
  if (version < METADATA_V4) throw new ArrowMetadataError(`${what} has Arrow metadata version ${version + 1}; the trace format writes version 5`);
  checkKeyValues(fb, message, 4);
  const bodyLength = fb.field(message, 3, 8) ? fb.u53(fb.field(message, 3, 8), `${what} body length`) : 0;
  const bodyStart = p + length;
  if (bodyStart + bodyLength > end) throw new ArrowMetadataError(`${what}'s body (bytes ${bodyStart}–${bodyStart + bodyLength}) runs past the data section (${end} bytes)`);
  if (bodyStart % 8 !== 0) throw new ArrowMetadataError(`${what}'s body starts at byte ${bodyStart}, not on the 8-byte boundary Arrow requires`);
  if (bodyLength !== block.bodyLength) throw new ArrowMetadataError(`${what}'s body is ${bodyLength} bytes in its message but ${block.bodyLength} in the footer`);
  return { fb, message, bodyStart, bodyLength };
}

function headerOf(fb: Flat, message: FlatTable, want: number, what: string): FlatTable {
  const tag = fb.field(message, 1, 1) ? fb.u8(fb.field(message, 1, 1)) : 0;
  if (tag !== want) throw new ArrowMetadataError(`${what} is a message of type ${tag}, not ${want === HEADER_RECORD_BATCH ? 'a record batch' : 'a dictionary batch'}`);
  const header = fb.child(message, 2);
  if (!header) throw new ArrowMetadataError(`${what} has no header`);
  return header;
}

/** Result of the check: the columns' names and the rows the batches declare. */
export interface ArrowFileShape {
  columns: string[];
  rows: number;
}

/** Checks an Arrow IPC file (see the module comment); throws ArrowMetadataError for the first problem. */
export function checkArrowFile(file: Uint8Array, limits: TraceLimits): ArrowFileShape {
  if (file.length < 8 + 10 + 4 || MAGIC.some((c, i) => file[i] !== c) || MAGIC.some((c, i) => file[file.length - 6 + i] !== c)) {
    throw new ArrowMetadataError('it does not start and end with the ARROW1 magic of an Arrow IPC file (the stream format is not accepted)');
  }
  const tail = new Flat(file, 'the file');
  const footerLength = tail.i32(file.length - 10);
  const footerStart = file.length - 10 - footerLength;
  if (footerLength <= 0 || footerStart < 8) throw new ArrowMetadataError(`the footer length ${footerLength} does not fit the ${file.length}-byte file`);
  const fb = new Flat(file.subarray(footerStart, footerStart + footerLength), 'the footer');
  const footer = fb.root();
  const version = fb.field(footer, 0, 2) ? fb.u16(fb.field(footer, 0, 2)) : 0;
  if (version < METADATA_V4) throw new ArrowMetadataError(`its footer has Arrow metadata version ${version + 1}; the trace format writes version 5`);
  checkKeyValues(fb, footer, 4);
  const schemaTable = fb.child(footer, 1);
  if (!schemaTable) throw new ArrowMetadataError('the footer has no schema');
  const columns = readSchema(fb, schemaTable, limits);
  const dictionaryBlocks = readBlocks(fb, footer, 2, 'dictionary block');
  const batchBlocks = readBlocks(fb, footer, 3, 'record batch');
  if (dictionaryBlocks.length + batchBlocks.length > limits.maxRecordBatches) {
    throw new ArrowMetadataError(`the table has ${dictionaryBlocks.length + batchBlocks.length} batches, more than the ${limits.maxRecordBatches} this reader accepts`, true);
  }

  const spans: Array<[number, number]> = [];
  /** Decompressed bytes of the table's compressed buffers so far. */
  const budget = { bytes: 0 };
  const dictionaries = new Map<number, { name: string; kind: ColumnLayout['kind']; width: number }>();
  for (const c of columns) if (c.dictionary && !dictionaries.has(c.dictionary.id)) dictionaries.set(c.dictionary.id, { name: `${c.name} (dictionary)`, kind: c.dictionary.kind, width: c.dictionary.width });
  const seen = new Set<number>();
  dictionaryBlocks.forEach((block, k) => {
    const what = `dictionary batch ${k}`;
    const m = readMessage(file, block, footerStart, what);
    spans.push([block.offset, m.bodyStart + m.bodyLength]);
    const header = headerOf(m.fb, m.message, HEADER_DICTIONARY_BATCH, what);
    const id = m.fb.field(header, 0, 8) ? m.fb.u53(m.fb.field(header, 0, 8), `${what} id`) : 0;
    const values = dictionaries.get(id);
    if (!values) throw new ArrowMetadataError(`${what} has id ${id}, which no column uses`);
    const isDelta = m.fb.field(header, 2, 1) ? m.fb.u8(m.fb.field(header, 2, 1)) !== 0 : false;
    if (isDelta && !seen.has(id)) throw new ArrowMetadataError(`${what} extends dictionary ${id} before it was defined`);
    seen.add(id);
    const data = m.fb.child(header, 1);
    if (!data) throw new ArrowMetadataError(`${what} has no values`);
    checkBatch(m.fb, data, [values], file.subarray(m.bodyStart, m.bodyStart + m.bodyLength), limits, `${what} (${values.name})`, budget);
  });

  let rows = 0;
  batchBlocks.forEach((block, k) => {
    const what = `record batch ${k}`;
    const m = readMessage(file, block, footerStart, what);
    spans.push([block.offset, m.bodyStart + m.bodyLength]);
    const header = headerOf(m.fb, m.message, HEADER_RECORD_BATCH, what);
    rows += checkBatch(m.fb, header, columns, file.subarray(m.bodyStart, m.bodyStart + m.bodyLength), limits, what, budget);
    if (rows > limits.maxTableRows) throw new ArrowMetadataError(`the table has more than the ${limits.maxTableRows} rows this reader accepts`, true);
  });
  // A dictionary column needs its dictionary only when there are rows to decode: an empty table
  // written without dictionary batches (pyarrow's, for one) is valid Arrow.
  if (rows > 0) for (const [id, d] of dictionaries) if (!seen.has(id)) throw new ArrowMetadataError(`column "${d.name.replace(' (dictionary)', '')}" has no dictionary (id ${id})`);
  // Blocks may not share bytes: one message read twice would let a small file stand for a huge
  // table (or grow a delta dictionary quadratically).
  spans.sort((x, y) => x[0] - y[0]);
  for (let k = 1; k < spans.length; k++) {
    if (spans[k]![0] < spans[k - 1]![1]) throw new ArrowMetadataError(`two batches listed in the footer share bytes (at byte ${spans[k]![0]})`);
  }
  return { columns: columns.map((c) => c.name), rows };
}
