import { describe, expect, it } from 'vitest';
import { cpuInfo, parseCacheSize, parseCpuinfo } from './cpu-info.js';

const X86 = `processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile
processor\t: 1
model name\t: ignored second block
`;

const ARM = `processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd asimdhp sve sve2 bf16 i8mm
CPU implementer\t: 0x41
`;

describe('cpu info', () => {
  it('reads the model and flags of the first x86 processor', () => {
    expect(parseCpuinfo(X86)).toEqual({ model: 'Intel(R) Xeon(R) Platinum 8480+', flags: ['fpu', 'sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512_bf16', 'amx_tile'] });
  });

  it('reads Arm features (no model line)', () => {
    const r = parseCpuinfo(ARM);
    expect(r.model).toBeNull();
    expect(r.flags).toContain('sve2');
  });

  it('parses cache sizes as /sys writes them', () => {
    expect(parseCacheSize('32768K\n')).toBe(32 * 1024 ** 2);
    expect(parseCacheSize('36M')).toBe(36 * 1024 ** 2);
    expect(parseCacheSize('512')).toBe(512);
    expect(parseCacheSize('lots')).toBeNull();
  });

  it('describes this machine', () => {
    const c = cpuInfo();
    expect(c.threads).toBeGreaterThan(0);
    expect(c.model.length).toBeGreaterThan(0);
  });
});
