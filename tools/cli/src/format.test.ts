import { describe, expect, it } from 'vitest';
import { formatBytes, formatError, formatRate, formatRatio, formatTime } from './format.js';

describe('format', () => {
  it('picks time units', () => {
    expect(formatTime(0.0123)).toBe('12.3 us');
    expect(formatTime(1.234)).toBe('1.23 ms');
    expect(formatTime(1530)).toBe('1.53 s');
  });

  it('uses GFLOP/s below one TFLOP/s', () => {
    expect(formatRate(3.12e11)).toBe('312 GFLOP/s');
    expect(formatRate(1.234e12)).toBe('1.23 TFLOP/s');
    expect(formatRate(6.5e14)).toBe('650 TFLOP/s');
  });

  it('formats bytes, errors and ratios', () => {
    expect(formatBytes(50 * 1024 ** 2)).toBe('50.0 MiB');
    expect(formatError(1.23e-4)).toBe('1.23e-4');
    expect(formatError(Number.NaN)).toBe('NaN');
    expect(formatRatio(1.234)).toBe('1.23x');
    expect(formatRatio(Number.NaN)).toBe('n/a');
  });
});
