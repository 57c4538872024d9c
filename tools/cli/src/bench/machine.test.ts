import { describe, expect, it } from 'vitest';
import type { TorchAnswer } from '../compare/torch.js';
import type { CpuInfo } from '../runtime/cpu-info.js';
import { cpuLine, machineFacts, threadFacts, torchLine } from './machine.js';
import { buildReport } from './report.js';

const zen3: CpuInfo = {
  model: 'AMD EPYC',
  id: 'AuthenticAMD family 25 model 1 stepping 1',
  threads: 2,
  arch: 'x64',
  simd: ['avx', 'avx2', 'fma'],
  lastLevelCacheBytes: 32 * 1024 ** 2,
};

const torch: TorchAnswer = {
  available: true,
  torch: '2.13.0+cpu',
  device: 'cpu (ATen capability AVX2)',
  capability: 'AVX2',
  threads: 2,
  timer: 'time.perf_counter',
  results: [],
};

describe('what a bench ran on', () => {
  it('names the CPU by model and identity, so that two EPYCs of one model name differ', () => {
    const m = machineFacts(zen3, 'linux-x64');
    expect(cpuLine(m)).toBe(
      'cpu: AMD EPYC [AuthenticAMD family 25 model 1 stepping 1], linux-x64, 2 logical CPUs, 32 MiB last-level cache; SIMD avx avx2 fma',
    );
    expect(cpuLine(machineFacts({ ...zen3, id: 'AuthenticAMD family 26 model 2 stepping 1' }, 'linux-x64'))).not.toBe(
      cpuLine(m),
    );
    expect(cpuLine(machineFacts({ ...zen3, id: null, simd: [], lastLevelCacheBytes: null }, 'darwin-arm64'))).toBe(
      'cpu: AMD EPYC, darwin-arm64, 2 logical CPUs; no SIMD flags listed',
    );
  });

  it("states torch's version, capability and threads beside ours, or why torch did not run", () => {
    expect(torchLine(torch, threadFacts(true, 4, torch))).toBe(
      'torch 2.13.0+cpu on cpu (ATen capability AVX2): 2 threads (ours 4), timed with time.perf_counter',
    );
    expect(
      torchLine(
        { available: false, reason: 'torch is not importable: No module named torch' },
        threadFacts(true, 2, null),
      ),
    ).toBe('torch not compared: torch is not importable: No module named torch');
  });

  it('counts threads on the CPU only', () => {
    expect(threadFacts(true, 2, torch)).toEqual({ attn: 2, torch: 2 });
    expect(threadFacts(true, 2, null)).toEqual({ attn: 2, torch: null });
    expect(threadFacts(true, 2, { available: false, reason: 'x' })).toEqual({ attn: 2, torch: null });
    expect(threadFacts(false, 16, torch)).toEqual({ attn: null, torch: null });
  });

  it('puts the machine, paths, threads and torch capability in the JSON report', () => {
    const report = buildReport({
      device: 'AMD EPYC (2 threads)',
      machine: machineFacts(zen3, 'linux-x64'),
      clock: 'wall clock',
      settings: {},
      paths: { 'cpu-flash': { kernel: 'auto', isa: 'avx2', forward: 'avx2/fp32', backward: 'avx2/fp32', threads: 2 } },
      threads: threadFacts(true, 2, torch),
      rows: [],
      torch,
    });
    expect(report.machine).toEqual({ platform: 'linux-x64', cpu: zen3 });
    expect(report.paths['cpu-flash']).toMatchObject({ isa: 'avx2', forward: 'avx2/fp32' });
    expect(report.threads).toEqual({ attn: 2, torch: 2 });
    expect(report.torch).toEqual({
      available: true,
      version: '2.13.0+cpu',
      device: 'cpu (ATen capability AVX2)',
      capability: 'AVX2',
      timer: 'time.perf_counter',
      threads: 2,
    });
    // A GPU answer has no capability field rather than an empty one.
    const gpu = buildReport({
      device: 'H100',
      machine: machineFacts(zen3),
      clock: 'cuda events',
      settings: {},
      threads: threadFacts(false, 2, null),
      rows: [],
      torch: { ...torch, capability: undefined, device: 'NVIDIA H100' },
    });
    expect(gpu.torch).not.toHaveProperty('capability');
    expect(gpu.paths).toEqual({});
  });
});
