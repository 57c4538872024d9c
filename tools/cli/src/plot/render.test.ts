import { describe, expect, it } from 'vitest';
import { fakeRow } from '../../test/rows.js';
import { plotFormat, renderSvg, wrapHtml } from './render.js';
import { plotData } from './spec.js';

const rows = [512, 1024, 2048].flatMap((s, i) => [
  fakeRow({ backend: 'flash-cuda', seqQ: s, seqK: s, tflops: 300 + 10 * i }),
  fakeRow({ backend: 'cutlass-memeff', seqQ: s, seqK: s, tflops: 150 + 5 * i }),
  fakeRow({ backend: 'flash-cuda', mode: 'fwdbwd', seqQ: s, seqK: s, tflops: 250 + i }),
  fakeRow({ source: 'torch', backend: 'torch-cudnn', seqQ: s, seqK: s, tflops: 450 + i }),
  fakeRow({ backend: 'flash-cuda', causal: true, features: 'causal', seqQ: s, seqK: s, tflops: 200 + i }),
]);

describe('chart', () => {
  it('makes one panel per case family and one series per backend and mode', () => {
    const d = plotData([...rows, fakeRow({ status: 'unsupported', reason: 'x', tflops: undefined })]);
    expect(d.unit).toBe('TFLOP/s');
    expect(new Set(d.points.map((p) => p.panel))).toEqual(
      new Set(['D=128, non-causal, bfloat16, H=16', 'D=128, causal, bfloat16, H=16']),
    );
    expect(new Set(d.points.map((p) => p.series))).toEqual(
      new Set(['flash-cuda fwd', 'cutlass-memeff fwd', 'flash-cuda fwdbwd', 'torch-cudnn fwd']),
    );
    expect(d.seqs).toEqual([512, 1024, 2048]);
  });

  it('switches to GFLOP/s when everything is below one TFLOP/s', () => {
    const d = plotData([fakeRow({ tflops: 0.05 })]);
    expect(d.unit).toBe('GFLOP/s');
    expect(d.points[0]!.y).toBeCloseTo(50);
  });

  it('renders an SVG with axes, a legend entry per series, and lines', async () => {
    const svg = await renderSvg(rows, 'attn bench test', 'subtitle');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/role-axis"/g)!.length).toBe(4); // x and y in each of two panels
    expect(svg).toContain('sequence length (keys)');
    expect(svg).toContain('TFLOP/s');
    expect(svg).toContain('role-legend');
    for (const series of [
      'flash-cuda fwd',
      'cutlass-memeff fwd',
      'flash-cuda fwdbwd',
      'torch-cudnn fwd',
      'PyTorch SDPA',
    ])
      expect(svg).toContain(`>${series}<`);
    // 4 series in the non-causal panel + 1 in the causal one, each a path
    expect(svg.match(/class="mark-line role-mark"/g)!.length).toBe(5);
    expect(svg).toContain('>1k<'); // 1024 labelled as 1k
  });

  it('refuses an empty chart and unknown file types', async () => {
    await expect(renderSvg([fakeRow({ status: 'failed', tflops: undefined })], 't', 's')).rejects.toThrow(
      /nothing to plot/,
    );
    expect(plotFormat('a.svg')).toBe('svg');
    expect(plotFormat('a.HTML')).toBe('html');
    expect(() => plotFormat('a.png')).toThrow(/must end in .svg or .html/);
  });

  it('wraps the SVG in a page with the data', () => {
    const html = wrapHtml('<svg></svg>', 'a <b>', [fakeRow({})]);
    expect(html).toContain('<title>a &lt;b&gt;</title>');
    expect(html).toContain('<svg></svg>');
    expect(html).toContain('&quot;flash-cuda&quot;');
  });
});
