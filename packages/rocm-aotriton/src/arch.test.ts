import { describe, expect, it } from 'vitest';
import { archStatus, stableArchs } from './arch.js';

const v = (minor: number, patch = 0) => ({ major: 0, minor, patch });

describe('AOTriton arch lists', () => {
  it('MI200/MI300/MI350 are supported on every known version', () => {
    for (const ver of [v(10), v(11), v(11, 1), v(11, 2), v(12), v(12, 1), v(13)]) {
      for (const arch of ['gfx90a', 'gfx942', 'gfx950']) expect(archStatus(ver, arch)).toBe('supported');
    }
  });
  it('strips target features', () => {
    expect(archStatus(v(12), 'gfx942:sramecc+:xnack-')).toBe('supported');
  });
  it('gfx1100 was experimental in 0.11b only', () => {
    expect(archStatus(v(11), 'gfx1100')).toBe('experimental');
    expect(archStatus(v(11, 1), 'gfx1100')).toBe('supported');
  });
  it('gfx1151 left experimental in 0.12; gfx1250 is known from 0.12.1 and tech preview in 0.13', () => {
    expect(archStatus(v(11, 2), 'gfx1151')).toBe('experimental');
    expect(archStatus(v(12), 'gfx1151')).toBe('supported');
    expect(archStatus(v(11, 2), 'gfx1250')).toBe('unsupported');
    expect(archStatus(v(12), 'gfx1250')).toBe('unsupported');
    expect(archStatus(v(12, 1), 'gfx1250')).toBe('experimental');
    expect(archStatus(v(13), 'gfx1250')).toBe('tech-preview');
  });
  it('0.10b knows six archs, gfx1101 experimental; gfx1102, gfx1150, gfx1151 and gfx1200 came with 0.11', () => {
    expect(archStatus(v(10), 'gfx1100')).toBe('supported');
    expect(archStatus(v(10), 'gfx1201')).toBe('supported');
    expect(archStatus(v(10), 'gfx1101')).toBe('experimental');
    for (const a of ['gfx1102', 'gfx1150', 'gfx1151', 'gfx1200']) {
      expect(archStatus(v(10), a)).toBe('unsupported');
      expect(archStatus(v(11), a)).toBe('experimental');
    }
  });
  it('gfx1103 came with 0.11.1, gfx1152 with 0.11.2; gfx908 and gfx1030 never', () => {
    expect(archStatus(v(11), 'gfx1103')).toBe('unsupported');
    expect(archStatus(v(11, 1), 'gfx1103')).toBe('experimental');
    expect(archStatus(v(11, 1), 'gfx1152')).toBe('unsupported');
    expect(archStatus(v(11, 2), 'gfx1152')).toBe('experimental');
    expect(archStatus(v(13), 'gfx908')).toBe('unsupported');
    expect(archStatus(v(13), 'gfx1030')).toBe('unsupported');
    expect(archStatus(v(9, 2), 'gfx942')).toBe('unsupported');
  });
  it('lists the stable set', () => {
    expect(stableArchs(v(12))).toEqual(
      expect.arrayContaining(['gfx90a', 'gfx942', 'gfx950', 'gfx1100', 'gfx1151', 'gfx1201']),
    );
    expect(stableArchs(v(12))).not.toContain('gfx1200');
  });
});
