/**
 * Number formatters used by every view. They never depend on the host's locale or time zone:
 * digits are grouped with commas and units are always written out, so a screenshot or a test
 * reads the same everywhere.
 */

/** Groups the integer part with commas: 1234567 -> "1,234,567". Non-integers keep `decimals`. */
export function groupDigits(value: number, decimals = 0): string {
  if (!Number.isFinite(value)) return String(value);
  const negative = value < 0;
  const fixed = Math.abs(value).toFixed(decimals);
  const [intPart, fracPart] = fixed.split('.');
  const grouped = intPart!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return (negative ? '-' : '') + grouped + (fracPart !== undefined ? '.' + fracPart : '');
}

/**
 * An exact count with its unit: formatCount(1234, 'page') -> "1,234 pages".
 * Without a unit only the grouped number is returned (for table cells whose header names it).
 */
export function formatCount(value: number, unit?: string, pluralUnit?: string): string {
  const n = groupDigits(Math.round(value));
  if (unit === undefined) return n;
  const u = Math.abs(value) === 1 ? unit : (pluralUnit ?? unit + 's');
  return `${n} ${u}`;
}

/**
 * A score or ratio of any size, readable: 1131410.1 -> "1,131,410", 12.345 -> "12.3",
 * 0.04567 -> "0.0457" (three significant digits below 100, whole and grouped from 100 up).
 */
export function formatScore(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return groupDigits(Math.round(value));
  if (value === 0) return '0';
  return String(Number(value.toPrecision(3)));
}

/** Short counts for axis ticks: 950 -> "950", 1500 -> "1.5k", 2_000_000 -> "2M". */
export function formatCompact(value: number): string {
  const abs = Math.abs(value);
  const units: Array<[number, string]> = [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [scale, suffix] of units) {
    if (abs >= scale) return trimZeros((value / scale).toFixed(abs / scale < 10 ? 1 : 0)) + suffix;
  }
  return trimZeros(value.toFixed(abs < 10 && !Number.isInteger(value) ? 1 : 0));
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** Three significant digits, at most two decimals: 1.5 -> "1.50", 12.34 -> "12.3", 512 -> "512". */
function threeDigits(value: number): string {
  const abs = Math.abs(value);
  if (abs < 10) return value.toFixed(2);
  if (abs < 100) return value.toFixed(1);
  return groupDigits(value, 0);
}

const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** Bytes in binary units: 512 -> "512 B", 4096 -> "4.00 KiB", 68719476736 -> "64.0 GiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return 'unknown';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BINARY_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${groupDigits(value)} B`;
  // 1023.9 KiB would print as "1024 KiB": step up instead.
  if (threeDigits(value) === '1,024' && unit < BINARY_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${threeDigits(value)} ${BINARY_UNITS[unit]}`;
}

/**
 * A duration given in microseconds, in the largest unit that keeps it readable:
 * 523 -> "523 µs", 12_345 -> "12.3 ms", 1_500_000 -> "1.50 s", 150_000_000 -> "2.50 min".
 */
export function formatDurationUs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return 'unknown';
  const abs = Math.abs(us);
  if (abs < 1000) return `${groupDigits(us)} µs`;
  if (abs < 1e6) return `${threeDigits(us / 1e3)} ms`;
  if (abs < 60e6) return `${threeDigits(us / 1e6)} s`;
  return `${threeDigits(us / 60e6)} min`;
}

/** Axis-tick durations: like formatDurationUs but without trailing zeros ("1.5 s", "0 s"). */
export function formatDurationTick(us: number): string {
  const abs = Math.abs(us);
  if (us === 0) return '0';
  if (abs < 1000) return `${trimZeros(us.toFixed(0))} µs`;
  if (abs < 1e6) return `${trimZeros((us / 1e3).toFixed(2))} ms`;
  if (abs < 60e6) return `${trimZeros((us / 1e6).toFixed(2))} s`;
  return `${trimZeros((us / 60e6).toFixed(2))} min`;
}

/** A fraction (0..1) as a percentage: 0.4213 -> "42.1%"; NaN (0 of 0) -> "–". */
export function formatPercent(fraction: number, decimals = 1): string {
  if (!Number.isFinite(fraction)) return '–';
  return `${(fraction * 100).toFixed(decimals)}%`;
}

/** Bandwidth in GB/s (10^9 bytes per second), as the trace stores it. */
export function formatGBps(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'unknown';
  return `${threeDigits(value)} GB/s`;
}

/** A cpu set the way the kernel writes cpulists: [0,1,2,3,8,10,11] -> "0-3,8,10-11". */
export function formatCpuList(cpus: readonly number[]): string {
  if (cpus.length === 0) return 'none';
  const sorted = [...cpus].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = sorted[0]!;
  let prev = start;
  for (let i = 1; i <= sorted.length; i++) {
    const cpu = sorted[i];
    if (cpu !== undefined && cpu === prev + 1) {
      prev = cpu;
      continue;
    }
    parts.push(start === prev ? String(start) : `${start}-${prev}`);
    if (cpu !== undefined) {
      start = cpu;
      prev = cpu;
    }
  }
  return parts.join(',');
}

/** A UTC timestamp in ISO form without milliseconds: "2026-11-21 19:50:00 UTC". */
export function formatUtc(unixMs: number): string {
  if (!Number.isFinite(unixMs)) return 'unknown';
  return new Date(unixMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}
