/**
 * Per-window cost of the traffic simulator alone (simulateMatrix), without aggregation: access
 * matrices of the bench's 8-node machine and the 4-node Carrefour machine at light, medium and
 * saturating load. Deterministic inputs; prints µs per simulated window.
 * Usage: node --import tsx bench/simulate-window.ts [CALLS]
 */
import { simulateMatrix } from '../src/engine/simulate.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';

const calls = Number(process.argv[2] ?? 20000);
let x = 7;
const rnd = () => {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return (x >>> 0) / 4294967296;
};
for (const id of ['amd-genoa-2s-nps4', 'amd-opteron-8385-4p', 'amd-asymsched-machine-a']) {
  const machine = machineModel(getPreset(id));
  const n = machine.nodeCount;
  for (const [label, accessesPerWindow] of [['light', 1e5], ['medium', 1e7], ['saturating', 1e9]] as const) {
    const matrices = Array.from({ length: 64 }, () => {
      const loads = new Float64Array(n * n);
      const stores = new Float64Array(n * n);
      for (let i = 0; i < n * n; i++) {
        loads[i] = rnd() * (accessesPerWindow / (n * n)) * 1.4;
        stores[i] = rnd() * (accessesPerWindow / (n * n)) * 0.6;
      }
      return { loads, stores };
    });
    let sink = 0;
    for (let i = 0; i < 500; i++) sink += simulateMatrix(machine, matrices[i % 64]!.loads, matrices[i % 64]!.stores, 100_000).predictedUs;
    const t = performance.now();
    for (let i = 0; i < calls; i++) sink += simulateMatrix(machine, matrices[i % 64]!.loads, matrices[i % 64]!.stores, 100_000).predictedUs;
    const us = ((performance.now() - t) * 1000) / calls;
    console.log(`${id.padEnd(24)} ${label.padEnd(10)} ${us.toFixed(2)} µs per window${sink < 0 ? ' ' : ''}`);
  }
}
