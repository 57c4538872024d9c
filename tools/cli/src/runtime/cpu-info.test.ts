import { describe, expect, it } from 'vitest';
import { cpuInfo, parseCacheSize, parseCpuinfo } from './cpu-info.js';

const X86 = `processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile
processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 999
model name\t: ignored second block
`;

/** A VM's EPYC: the model name alone does not say which Zen; family and model do. */
const EPYC = `processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu avx avx2 fma
`;

const ARM = `processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd asimdhp sve sve2 bf16 i8mm
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd40
processor\t: 1
CPU implementer\t: 0x42
CPU part\t: 0xd4f
`;

describe('cpu info', () => {
  it('reads the model and flags of the first x86 processor', () => {
    expect(parseCpuinfo(X86)).toEqual({
      model: 'Intel(R) Xeon(R) Platinum 8480+',
      id: 'GenuineIntel family 6 model 143 stepping 8',
      flags: ['fpu', 'sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512_bf16', 'amx_tile'],
    });
  });

  it('tells CPUs with the same model name apart by family and model', () => {
    expect(parseCpuinfo(EPYC)).toMatchObject({ model: 'AMD EPYC', id: 'AuthenticAMD family 25 model 1 stepping 1' });
  });

  it('reads Arm features (no model line)', () => {
    const r = parseCpuinfo(ARM);
    expect(r.model).toBeNull();
    expect(r.flags).toContain('sve2');
    expect(r.id).toBe('implementer 0x41 part 0xd40');
  });

  it('has no identity where /proc/cpuinfo gives none', () => {
    expect(parseCpuinfo('')).toEqual({ model: null, id: null, flags: [] });
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
    expect(c.id === null || c.id.length > 0).toBe(true);
  });
});
