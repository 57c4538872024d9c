// Bench rows for tests of the table, ratios and the chart (no timing involved).
import type { BenchRow } from '../src/bench/row.js';

export function fakeRow(over: Partial<BenchRow>): BenchRow {
  return {
    source: 'attn',
    backend: 'flash-cuda',
    mode: 'fwd',
    dtype: 'bfloat16',
    device: 'cuda:0',
    batch: 16,
    headsQ: 16,
    headsKV: 16,
    seqQ: 1024,
    seqK: 1024,
    headDim: 128,
    headDimV: 128,
    causal: false,
    features: 'non-causal',
    status: 'ok',
    flops: 1e12,
    bytes: 1e8,
    medianMs: 2,
    p20Ms: 1.9,
    p80Ms: 2.1,
    samples: 10,
    sets: 2,
    tflops: 500,
    ...over,
  };
}
