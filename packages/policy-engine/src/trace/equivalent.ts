/**
 * Columns other Arrow writers store in an equivalent type (issue 32: "any valid Arrow reads").
 * A trace rewritten by polars has `string_view` text and `dictionary<uint32, string_view>`
 * categoricals; DuckDB and arrow-rs may write `large_utf8`. The values are the same; the format's
 * own types are narrower. Such a column is converted once, on read, to the format's type, so the
 * checks and every query downstream see one layout. A value that does not fit (a dictionary with
 * more distinct values than the format's index type holds) is refused, naming the column.
 *
 * The view layouts were bounds-checked byte by byte before decoding (arrow-ipc.ts), so reading the
 * strings here is safe.
 */
import { DataType, Dictionary, Int8, Int16, Int32, Table, Utf8, makeData, makeVector, vectorFromArray, type Data, type Vector } from 'apache-arrow';
import { TraceError } from './errors.js';

const isText = (t: DataType): boolean => DataType.isUtf8(t) || DataType.isLargeUtf8(t) || DataType.isUtf8View(t);

/** The index type of a format dictionary type (`dictionary<int8, utf8>` …), or null. */
function dictionaryIndex(spec: string): { bits: 8 | 16 | 32 } | null {
  const m = /^dictionary<int(8|16|32), utf8>$/.exec(spec);
  return m ? { bits: Number(m[1]) as 8 | 16 | 32 } : null;
}

/** Whether `actual` holds the same values as the format's `spec` type in another layout. */
export function isEquivalentType(actual: DataType, spec: string): boolean {
  if (spec === 'utf8') return isText(actual);
  if (dictionaryIndex(spec)) return DataType.isDictionary(actual) && DataType.isInt(actual.indices) && isText(actual.dictionary);
  return false;
}

function textOf(v: Vector | Data): string[] {
  const vec = 'get' in v ? (v as Vector) : makeVector(v as Data);
  const out = new Array<string>(vec.length);
  for (let i = 0; i < vec.length; i++) out[i] = (vec.get(i) as string | null) ?? '';
  return out;
}

/**
 * `vector` in the format's `spec` type. Nulls stay nulls (the column checks then refuse them where
 * the format has none). Dictionary chunks are merged into one dictionary of their distinct values.
 */
export function toFormatType(vector: Vector, spec: string, where: string): Vector {
  if (spec === 'utf8') {
    const values: Array<string | null> = [];
    for (let i = 0; i < vector.length; i++) values.push(vector.get(i) as string | null);
    return vectorFromArray(values, new Utf8());
  }
  const index = dictionaryIndex(spec)!;
  const max = 2 ** (index.bits - 1) - 1;
  const codes = index.bits === 8 ? new Int8Array(vector.length) : index.bits === 16 ? new Int16Array(vector.length) : new Int32Array(vector.length);
  const globalIndex = new Map<string, number>();
  const dictionary: string[] = [];
  let nulls = 0;
  const validity = new Uint8Array(Math.ceil(vector.length / 8)).fill(0xff);
  let row = 0;
  for (const chunk of vector.data) {
    const chunkDict = chunk.dictionary ? textOf(chunk.dictionary) : [];
    // Only the values the chunk's codes use enter the dictionary (polars writes its whole string cache).
    const remap = new Int32Array(chunkDict.length).fill(-1);
    const src = chunk.values as ArrayLike<number | bigint>;
    for (let i = 0; i < chunk.length; i++, row++) {
      if (!chunk.getValid(i)) {
        nulls++;
        validity[row >> 3]! &= ~(1 << (row & 7));
        continue;
      }
      const c = Number(src[i]);
      if (!(c >= 0 && c < chunkDict.length)) {
        throw new TraceError('index-out-of-range', `Column ${where}, row ${row}: dictionary code ${c}, but the column's dictionary has ${chunkDict.length} values. The file is damaged.`);
      }
      let g = remap[c]!;
      if (g < 0) {
        const s = chunkDict[c]!;
        g = globalIndex.get(s) ?? -1;
        if (g < 0) {
          g = dictionary.length;
          if (g > max) {
            throw new TraceError(
              'column-type',
              `Column ${where} has more than ${max + 1} distinct values, more than the format's ${spec} holds. The file was written by a program that does not follow the format.`,
            );
          }
          dictionary.push(s);
          globalIndex.set(s, g);
        }
        remap[c] = g;
      }
      codes[row] = g;
    }
  }
  const indices = index.bits === 8 ? new Int8() : index.bits === 16 ? new Int16() : new Int32();
  const type = new Dictionary(new Utf8(), indices);
  const data = makeData({
    type,
    length: vector.length,
    nullCount: nulls,
    nullBitmap: nulls > 0 ? validity : null,
    data: codes,
    dictionary: vectorFromArray(dictionary, new Utf8()),
  } as Parameters<typeof makeData>[0] & { type: Dictionary<Utf8, Int8 | Int16 | Int32> });
  return makeVector(data);
}

/** `table` with the columns in `replaced` swapped for their converted vectors. */
export function withColumns(table: Table, replaced: Map<string, Vector>): Table {
  if (replaced.size === 0) return table;
  const columns: Record<string, Vector> = {};
  for (const f of table.schema.fields) columns[f.name] = replaced.get(f.name) ?? table.getChild(f.name)!;
  return new Table(columns);
}
