/**
 * What a trace measured, computed from its own columns independently of the engine (the tests that
 * hold observed against the recording use it).
 */
import { dictionaryColumn, numericColumn } from '../../src/trace/columns.js';
import type { Trace } from '../../src/trace/types.js';

/** Per window: Σ latency·weight and Σ weight of DRAM loads with a latency, and local / all DRAM accesses (weighted). */
export function measuredPerWindow(trace: Trace, windowUs: number, windows: number) {
  const s = trace.tables.samples;
  const time = numericColumn<Uint32Array>(s, 'time_us');
  const lat = numericColumn<Uint32Array>(s, 'latency_cycles');
  const weight = numericColumn<Uint32Array>(s, 'weight');
  const op = dictionaryColumn(s, 'op');
  const ds = dictionaryColumn(s, 'data_source');
  const LOAD = op.values.indexOf('load');
  const STORE = op.values.indexOf('store');
  const LOCAL = ds.values.indexOf('local-dram');
  const REMOTE = ds.values.indexOf('remote-dram');
  const latSum = new Float64Array(windows);
  const latW = new Float64Array(windows);
  const local = new Float64Array(windows);
  const all = new Float64Array(windows);
  for (let i = 0; i < s.numRows; i++) {
    const o = op.codes[i]!;
    const d = ds.codes[i]!;
    if ((o !== LOAD && o !== STORE) || (d !== LOCAL && d !== REMOTE)) continue;
    const w = Math.min(windows - 1, Math.floor(time[i]! / windowUs));
    const wt = weight[i]! || 1;
    all[w]! += wt;
    if (d === LOCAL) local[w]! += wt;
    if (o === LOAD && lat[i]! > 0) {
      latSum[w]! += lat[i]! * wt;
      latW[w]! += wt;
    }
  }
  return { latSum, latW, local, all };
}

