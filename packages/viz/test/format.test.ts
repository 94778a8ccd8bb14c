import { describe, expect, it } from 'vitest';
import {
  formatBytes,
  formatCompact,
  formatCount,
  formatCpuList,
  formatDurationTick,
  formatDurationUs,
  formatGBps,
  formatPercent,
  formatScore,
  formatUtc,
  groupDigits,
} from '../src/format.js';

describe('groupDigits', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1000, '1,000'],
    [1234567, '1,234,567'],
    [-1234567, '-1,234,567'],
  ])('%d -> %s', (value, text) => expect(groupDigits(value)).toBe(text));

  it('keeps decimals when asked', () => expect(groupDigits(12345.678, 2)).toBe('12,345.68'));
});

describe('formatCount', () => {
  it('writes the unit, singular and plural', () => {
    expect(formatCount(1, 'page')).toBe('1 page');
    expect(formatCount(0, 'page')).toBe('0 pages');
    expect(formatCount(1234567, 'sample')).toBe('1,234,567 samples');
    expect(formatCount(3, 'cpu')).toBe('3 cpus');
    expect(formatCount(2, 'access', 'accesses')).toBe('2 accesses');
  });
  it('without a unit is just the grouped number', () => expect(formatCount(40960)).toBe('40,960'));
});

describe('formatCompact', () => {
  it.each([
    [0, '0'],
    [950, '950'],
    [1000, '1k'],
    [1500, '1.5k'],
    [25_000, '25k'],
    [2_000_000, '2M'],
    [3_400_000_000, '3.4G'],
    [0.5, '0.5'],
  ])('%d -> %s', (value, text) => expect(formatCompact(value)).toBe(text));
});

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [512, '512 B'],
    [4096, '4.00 KiB'],
    [1536, '1.50 KiB'],
    [10 * 1024 * 1024, '10.0 MiB'],
    [512 * 1024 * 1024, '512 MiB'],
    [64 * 1024 ** 3, '64.0 GiB'],
    [1024 * 1024 - 1, '1.00 MiB'],
    [2 * 1024 ** 4, '2.00 TiB'],
  ])('%d -> %s', (value, text) => expect(formatBytes(value)).toBe(text));

  it('says unknown for null', () => expect(formatBytes(null)).toBe('unknown'));
});

describe('formatDurationUs', () => {
  it.each([
    [0, '0 µs'],
    [523, '523 µs'],
    [12_345, '12.3 ms'],
    [999_000, '999 ms'],
    [1_500_000, '1.50 s'],
    [20_000_000, '20.0 s'],
    [150_000_000, '2.50 min'],
  ])('%d µs -> %s', (value, text) => expect(formatDurationUs(value)).toBe(text));

  it('ticks drop trailing zeros', () => {
    expect(formatDurationTick(0)).toBe('0');
    expect(formatDurationTick(500_000)).toBe('500 ms');
    expect(formatDurationTick(1_500_000)).toBe('1.5 s');
    expect(formatDurationTick(2_000_000)).toBe('2 s');
    expect(formatDurationTick(250)).toBe('250 µs');
  });
});

describe('other formatters', () => {
  it('percent', () => {
    expect(formatPercent(0.4213)).toBe('42.1%');
    expect(formatPercent(1)).toBe('100.0%');
    expect(formatPercent(NaN)).toBe('–');
  });
  it('bandwidth', () => {
    expect(formatGBps(12.8)).toBe('12.8 GB/s');
    expect(formatGBps(null)).toBe('unknown');
  });
  it('cpu lists like the kernel writes them', () => {
    expect(formatCpuList([0, 1, 2, 3, 8, 10, 11])).toBe('0-3,8,10-11');
    expect(formatCpuList([5])).toBe('5');
    expect(formatCpuList([3, 1, 2])).toBe('1-3');
    expect(formatCpuList([])).toBe('none');
  });
  it('UTC timestamps do not depend on the time zone', () => {
    expect(formatUtc(Date.UTC(2026, 10, 21, 19, 50, 0))).toBe('2026-11-21 19:50:00 UTC');
  });
});

describe('formatScore', () => {
  it('groups large scores, keeps three significant digits of small ones', () => {
    expect(formatScore(1131410.1)).toBe('1,131,410');
    expect(formatScore(100)).toBe('100');
    expect(formatScore(12.345)).toBe('12.3');
    expect(formatScore(0.04567)).toBe('0.0457');
    expect(formatScore(0)).toBe('0');
    expect(formatScore(-2500.4)).toBe('-2,500');
  });
});

describe('heatmap time ticks', () => {
  it('are round times, not fractions of the range', async () => {
    const { timeTicks } = await import('../src/AddressHeatmap.js');
    const ticks = timeTicks(0, 1_818_180, 6);
    expect(ticks).toEqual([0, 200_000, 400_000, 600_000, 800_000, 1_000_000, 1_200_000, 1_400_000, 1_600_000, 1_800_000]);
    expect(ticks.map(formatDurationTick)).toContain('400 ms');
    expect(timeTicks(5, 5, 6)).toEqual([5]);
  });
});
