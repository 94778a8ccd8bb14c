/**
 * Fast column access for trace tables: whole columns as typed arrays (no per-row objects), and
 * dictionary columns as integer codes plus their strings.
 */
import type { Table } from 'apache-arrow';

type TypedArray =
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | Float32Array
  | Float64Array;
type BigIntArray = BigInt64Array | BigUint64Array;

export function numericColumn<T extends TypedArray | BigIntArray = TypedArray>(table: Table, name: string): T {
  const v = table.getChild(name);
  if (!v) throw new Error(`column ${name} missing`);
  return v.toArray() as T;
}

export interface DictionaryColumn {
  /** Per row: index into `values`. */
  codes: Int32Array;
  /** The distinct strings, in code order. */
  values: string[];
}

/** Decodes a dictionary<int, utf8> column into codes over one merged value list. */
export function dictionaryColumn(table: Table, name: string): DictionaryColumn {
  const v = table.getChild(name);
  if (!v) throw new Error(`column ${name} missing`);
  const codes = new Int32Array(v.length);
  const values: string[] = [];
  const lookup = new Map<string, number>();
  let row = 0;
  for (const data of v.data) {
    const dict = data.dictionary;
    const local: number[] = [];
    if (dict) {
      for (let i = 0; i < dict.length; i++) {
        const s = String(dict.get(i));
        let c = lookup.get(s);
        if (c === undefined) {
          c = values.length;
          values.push(s);
          lookup.set(s, c);
        }
        local.push(c);
      }
    }
    const idx = data.values as ArrayLike<number>;
    for (let i = 0; i < data.length; i++) codes[row + i] = local[idx[i]!] ?? -1;
    row += data.length;
  }
  return { codes, values };
}

/** A utf8 column as strings (null where the value is null). */
export function stringColumn(table: Table, name: string): Array<string | null> {
  const v = table.getChild(name);
  if (!v) throw new Error(`column ${name} missing`);
  const out: Array<string | null> = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const s = v.get(i);
    out[i] = s === null || s === undefined ? null : String(s);
  }
  return out;
}
