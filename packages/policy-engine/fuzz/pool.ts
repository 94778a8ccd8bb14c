/**
 * Runs fuzz inputs in a pool of child processes, so that an input that hangs, crashes the process
 * or exhausts memory is counted instead of stopping the run: each input has a time limit, each
 * process a heap limit (--max-old-space-size) and a resident-memory watch (/proc/PID/statm, every
 * 50 ms; ArrayBuffers live outside the heap), and a process that was killed or died is replaced.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildReply, ChildRequest } from './child.js';
import { loadCorpus, type CorpusKind } from './corpus.js';
import { makeInput } from './mutate.js';
import type { OutcomeKind } from './target.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGE_ROOT = join(HERE, '..');

export interface FuzzOptions {
  /** Inputs: indices first … first+count-1 of run `seed`. */
  count: number;
  seed: number;
  first?: number;
  /** Processes in parallel. */
  jobs: number;
  /** Time limit per input (a longer one is a hang). */
  timeoutMs: number;
  /** Memory limit per process: heap limit, and resident memory above which it is killed (oom). */
  maxRssMb: number;
  corpus: CorpusKind;
  /** Run a short engine analysis on accepted traces (target.ts). */
  engine: boolean;
  /** Where to write the inputs that failed (as .numascope files), if anywhere. */
  saveDir?: string;
  onProgress?: (done: number, report: FuzzReport) => void;
  /** Make inputs 0–3 hang, crash, exhaust memory and throw (child.ts), to test the pool itself. */
  selfTest?: boolean;
}

export interface FuzzFailure {
  index: number;
  kind: OutcomeKind;
  stage?: string;
  message?: string;
  base?: string;
  mutations?: string[];
}

export interface FuzzReport {
  inputs: number;
  outcomes: Record<OutcomeKind, number>;
  /** TraceError codes of the typed errors; `engine:CODE` for engine refusals of accepted traces. */
  codes: Record<string, number>;
  failures: FuzzFailure[];
  /** Largest resident memory of one fuzzing process (corpus and runtime included), MiB. */
  peakRssMb: number;
  /** Resident memory of an idle process after loading the corpus, MiB (the baseline of the above). */
  baselineRssMb: number;
  /** Time of the target (read, summary, engine) on the slowest input, ms. */
  slowestInputMs: number;
  /** Which input that was. */
  slowest: { index: number; base?: string; mutations?: string[] } | null;
  wallMs: number;
  /** Processes started in all (one per job, plus one per kill or death). */
  processes: number;
}

const FAILURES: readonly OutcomeKind[] = ['untyped', 'crash', 'oom', 'hang'];

export function isFailure(kind: OutcomeKind): boolean {
  return FAILURES.includes(kind);
}

function rssOf(pid: number): number | null {
  try {
    const statm = readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ');
    return Number(statm[1]) * 4096;
  } catch {
    return null;
  }
}

export async function runFuzz(o: FuzzOptions): Promise<FuzzReport> {
  const start = performance.now();
  const report: FuzzReport = {
    inputs: 0,
    outcomes: { ok: 0, 'trace-error': 0, untyped: 0, crash: 0, oom: 0, hang: 0 },
    codes: {},
    failures: [],
    peakRssMb: 0,
    baselineRssMb: 0,
    slowestInputMs: 0,
    slowest: null,
    wallMs: 0,
    processes: 0,
  };
  const first = o.first ?? 0;
  let next = first;
  const end = first + o.count;
  const limitBytes = o.maxRssMb * 2 ** 20;
  let corpusForSaving: ReturnType<typeof loadCorpus> | null = null;

  const record = (index: number, kind: OutcomeKind, extra: Omit<FuzzFailure, 'index' | 'kind'> & { code?: string } = {}) => {
    report.inputs++;
    report.outcomes[kind]++;
    if (extra.code) report.codes[extra.code] = (report.codes[extra.code] ?? 0) + 1;
    if (isFailure(kind)) {
      const { code: _code, ...rest } = extra;
      report.failures.push({ index, kind, ...rest });
      if (o.saveDir) {
        corpusForSaving ??= loadCorpus(o.corpus);
        mkdirSync(o.saveDir, { recursive: true });
        writeFileSync(join(o.saveDir, `seed-${o.seed}-input-${index}-${kind}.numascope`), makeInput(corpusForSaving, o.seed, index).bytes);
      }
    }
    o.onProgress?.(report.inputs, report);
  };

  const runWorker = (): Promise<void> =>
    new Promise((resolve) => {
      let child: ChildProcess;
      let current: { index: number; base?: string; mutations?: string[] } | null = null;
      let timer: NodeJS.Timeout | null = null;
      let watch: NodeJS.Timeout | null = null;
      let stderr = '';
      let killedFor: 'hang' | 'oom' | null = null;

      const dispatch = () => {
        if (next >= end) {
          child.removeAllListeners('exit');
          child.on('exit', () => resolve());
          child.disconnect();
          return;
        }
        current = { index: next++ };
        killedFor = null;
        timer = setTimeout(() => {
          killedFor = 'hang';
          child.kill('SIGKILL');
        }, o.timeoutMs);
        child.send({ seed: o.seed, index: current.index } satisfies ChildRequest);
      };

      const spawn = () => {
        report.processes++;
        stderr = '';
        child = fork(join(HERE, 'child.ts'), [], {
          cwd: PACKAGE_ROOT,
          execArgv: ['--import', 'tsx', `--max-old-space-size=${o.maxRssMb}`],
          env: { ...process.env, NUMASCOPE_FUZZ_CORPUS: o.corpus, NUMASCOPE_FUZZ_ENGINE: o.engine ? '1' : '0', NUMASCOPE_FUZZ_SELF_TEST: o.selfTest ? '1' : '0' },
          stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        });
        child.stderr!.on('data', (d: Buffer) => {
          stderr = (stderr + d.toString()).slice(-4000);
        });
        watch = setInterval(() => {
          const rss = child.pid ? rssOf(child.pid) : null;
          if (rss === null) return;
          report.peakRssMb = Math.max(report.peakRssMb, rss / 2 ** 20);
          if (rss > limitBytes && current) {
            killedFor = 'oom';
            child.kill('SIGKILL');
          }
        }, 50);
        child.on('message', (m: ChildReply) => {
          if (m.type === 'ready') {
            const rss = child.pid ? rssOf(child.pid) : null;
            if (rss !== null) report.baselineRssMb = Math.max(report.baselineRssMb, rss / 2 ** 20);
            dispatch();
          } else if (m.type === 'start' && current && m.index === current.index) {
            current.base = m.base;
            current.mutations = m.mutations;
          } else if (m.type === 'done' && current && m.index === current.index) {
            clearTimeout(timer!);
            report.peakRssMb = Math.max(report.peakRssMb, m.maxRssBytes / 2 ** 20);
            if (m.ms > report.slowestInputMs) {
              report.slowestInputMs = m.ms;
              report.slowest = { index: m.index, base: current.base, mutations: current.mutations };
            }
            const { kind, code, stage, message } = m.outcome;
            record(m.index, kind, { code, stage, message, base: current.base, mutations: current.mutations });
            current = null;
            dispatch();
          }
        });
        child.on('exit', (codeNum, signal) => {
          clearInterval(watch!);
          if (timer) clearTimeout(timer);
          if (current) {
            const oomText = /heap out of memory|Allocation failed|allocation failed/i.test(stderr);
            const kind: OutcomeKind = killedFor ?? (oomText ? 'oom' : 'crash');
            const message =
              kind === 'hang'
                ? `no answer within ${o.timeoutMs} ms`
                : kind === 'oom' && killedFor
                  ? `resident memory above ${o.maxRssMb} MiB`
                  : `process exited (code ${codeNum}, signal ${signal}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`;
            record(current.index, kind, { message, base: current.base, mutations: current.mutations });
            current = null;
            if (next < end) spawn();
            else resolve();
          } else if (next < end) spawn();
          else resolve();
        });
      };
      spawn();
    });

  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.jobs, o.count)) }, runWorker));
  report.wallMs = performance.now() - start;
  return report;
}

/** The report as text: outcome counts, typed-error codes, memory, time, and each failure. */
export function formatReport(r: FuzzReport, o: Pick<FuzzOptions, 'seed' | 'first'>): string {
  const lines: string[] = [];
  const first = o.first ?? 0;
  lines.push(`trace reader fuzz: seed ${o.seed}, inputs ${first}–${first + r.inputs - 1} (${r.inputs}), ${(r.wallMs / 1000).toFixed(1)} s`);
  lines.push('outcomes:');
  for (const [k, v] of Object.entries(r.outcomes)) lines.push(`  ${k.padEnd(12)} ${String(v).padStart(7)}${isFailure(k as OutcomeKind) ? '   (failure)' : ''}`);
  lines.push('typed errors (TraceError code) and engine refusals of accepted traces:');
  for (const [k, v] of Object.entries(r.codes).sort((a, b) => b[1] - a[1])) lines.push(`  ${k.padEnd(24)} ${String(v).padStart(7)}`);
  lines.push(`peak resident memory of a fuzzing process: ${r.peakRssMb.toFixed(0)} MiB (idle with the corpus loaded: ${r.baselineRssMb.toFixed(0)} MiB)`);
  const slow = r.slowest ? ` (input ${r.slowest.index}: ${r.slowest.base}; ${(r.slowest.mutations ?? []).join('; ')})` : '';
  lines.push(`slowest input: ${r.slowestInputMs.toFixed(0)} ms${slow}; processes started: ${r.processes}`);
  for (const f of r.failures) {
    lines.push(`FAIL input ${f.index}: ${f.kind}${f.stage ? ` in ${f.stage}` : ''}: ${f.message ?? ''}`);
    lines.push(`     base ${f.base ?? '?'}; mutations: ${(f.mutations ?? []).join('; ')}`);
  }
  return lines.join('\n');
}
