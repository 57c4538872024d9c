import { describe, expect, it } from 'vitest';
import { fakeRow } from '../../test/rows.js';
import { allRatios, ratioTo } from './ratios.js';
import { renderSkipped, renderTable } from './table.js';

describe('bench table', () => {
  const ours = fakeRow({ medianMs: 2 });
  const torchFlash = fakeRow({ source: 'torch', backend: 'torch-flash', medianMs: 3, tflops: 333 });
  const torchCudnn = fakeRow({ source: 'torch', backend: 'torch-cudnn', medianMs: 1, tflops: 1000 });
  const otherCase = fakeRow({ source: 'torch', backend: 'torch-flash', seqK: 2048, seqQ: 2048, medianMs: 100 });

  it('computes torch time / our time on the same case only', () => {
    const rows = [ours, torchFlash, torchCudnn, otherCase];
    expect(ratioTo(ours, 'torch-flash', rows)).toBe(1.5);
    expect(ratioTo(ours, 'torch-cudnn', rows)).toBe(0.5);
    expect(ratioTo(ours, 'torch-math', rows)).toBeNull();
    expect(allRatios(rows)).toEqual([
      expect.objectContaining({ backend: 'flash-cuda', torch: 'torch-flash', ratio: 1.5 }),
      expect.objectContaining({ backend: 'flash-cuda', torch: 'torch-cudnn', ratio: 0.5 }),
    ]);
  });

  it('prints one row per result with units and ratio columns', () => {
    const text = renderTable([ours, torchFlash, torchCudnn]);
    const lines = text.split('\n');
    expect(lines[1]).toMatch(/backend.*mode.*time.*rate.*vs torch-flash.*vs torch-cudnn/);
    const ourLine = lines.find((l) => l.includes('flash-cuda'))!;
    expect(ourLine).toMatch(/2\.00 ms.*500 TFLOP\/s.*1\.50x.*0\.50x/);
    expect(lines.filter((l) => l.startsWith('│ torch-flash'))).toHaveLength(1);
  });

  it('lists why rows did not run, once per reason', () => {
    const skipped = [
      fakeRow({ backend: 'cpu-flash', status: 'unsupported', reason: 'headDimAtMost: D=512 > 256' }),
      fakeRow({ backend: 'cpu-flash', status: 'unsupported', reason: 'headDimAtMost: D=512 > 256', seqK: 2048 }),
      fakeRow({ backend: 'cpu-math', status: 'failed', reason: 'out of memory' }),
    ];
    expect(renderSkipped(skipped)).toEqual([
      'cpu-flash fwd unsupported: headDimAtMost: D=512 > 256',
      'cpu-math fwd failed: out of memory',
    ]);
    expect(renderTable(skipped)).toContain('unsupported');
  });

  it('adds GB/s for decode', () => {
    expect(renderTable([fakeRow({ bytes: 2e9, medianMs: 1 })], { bandwidth: true })).toMatch(/GB\/s[\s\S]*2000\.0/);
  });
});
