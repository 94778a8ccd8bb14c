/** Applying plans through the napi addon; rollback through the `numascope rollback` CLI (the binding has none). */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ApplyOptions, ApplyReport, RollbackRecord, RunOptions, RunReport } from '@numascope/protocol';
import type { CollectorAddon } from './addon';

export type RollbackRunner = (record: RollbackRecord) => Promise<ApplyReport>;

export async function applyPlan(addon: CollectorAddon, plan: Record<string, unknown>, opts: ApplyOptions): Promise<ApplyReport> {
  const target = plan.target as { pid?: unknown } | undefined;
  if (!target || target.pid !== opts.pid)
    throw new Error(`the plan targets process ${String(target?.pid)}, not ${opts.pid}: rebuild the plan for this process`);
  return addon.apply(JSON.stringify(plan), {
    pid: opts.pid,
    ...(opts.dryRun ? { dryRun: true } : {}),
    ...(opts.budgetMs !== undefined ? { budgetMs: opts.budgetMs } : {}),
    ...(opts.setSystemWeights ? { setSystemWeights: true } : {}),
  });
}

/**
 * Launches a program with the plan through the addon (`numascope run --plan`); resolves when it
 * exits. The argv defaults to the plan's target.command (the collector checks the plan).
 */
export async function runPlan(addon: CollectorAddon, plan: Record<string, unknown>, opts: RunOptions): Promise<RunReport> {
  return addon.runPlan(JSON.stringify(plan), {
    ...(opts.command ? { command: opts.command } : {}),
    ...(opts.dryRun ? { dryRun: true } : {}),
    ...(opts.anyProgram ? { anyProgram: true } : {}),
    ...(opts.weightsFallback ? { weightsFallback: opts.weightsFallback } : {}),
    ...(opts.setSystemWeights ? { setSystemWeights: true } : {}),
  });
}

/** Runs `numascope rollback --json RECORD` with the record written to a private temp file. */
export function cliRollback(bin: string): RollbackRunner {
  return async (record) => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'numascope-rollback-'));
    const file = path.join(dir, 'record.json');
    try {
      await fs.writeFile(file, JSON.stringify(record), { mode: 0o600 });
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(bin, ['rollback', '--json', '--quiet', file], { maxBuffer: 64 * 1024 * 1024 }, (err, out, errOut) => {
          // Exit code 3 (partly undone) still prints a report.
          if (err && !out.trim()) reject(new Error(`numascope rollback failed: ${errOut.trim() || err.message}`));
          else resolve(out);
        }),
      );
      return JSON.parse(stdout) as ApplyReport;
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  };
}
