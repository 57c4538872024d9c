// cpu-math forward: exact softmax attention in float64, one query row at a time (never an Sq x Sk
// buffer), reading q/k/v through their strides and their own dtype, and rounding the output to its
// dtype (params.dtype) once. float8_e4m3 inputs attend descale.q * q, descale.k * k, descale.v * v:
// descale.q * descale.k is folded into the score scale (ScoreRow), descale.v into the output row
// before its rounding to bfloat16.
import { emptyOutput, forwardOutput, OUTPUT_NAMES } from '@attn/core';
import type { ForwardOutputs, SdpaParams } from '@attn/core';
import { gather, gatherRows, scatterRow } from './host-io.js';
import { addWeightedRows, expRow, rowMax } from './kernels.js';
import { appendToCache, rotatedQuery } from '../kv-cache/host.js';
import { problemOf } from './problem.js';
import { ScoreRow } from './scores.js';

export function forwardMath(call: SdpaParams): ForwardOutputs {
  const params = withKvCache(call);
  const pb = problemOf(params);
  const { seqs, group, maxSeqK, dropout: drop } = pb;
  const { headsKV, headDim: D, headDimV: Dv, dtype } = params;
  const out = params.kvCache
    ? emptyOutput(OUTPUT_NAMES.out, [params.batch, params.seqQ, params.headsQ, Dv], { dtype }).transpose(1, 2) // stored [B, Sq, Hq, Dv]
    : forwardOutput(params, pb.outShape, { dtype });
  const logsumexp = emptyOutput(OUTPUT_NAMES.logsumexp, pb.lseShape, { dtype: 'float32' });
  const outRows = pb.rowsQ(out);
  const outData = out.hostData();
  const lseData = logsumexp.hostData();
  const qData = params.query.hostData();
  const kData = params.key.hostData();
  const vData = params.value.hostData();

  const scores = new ScoreRow(params, maxSeqK);
  const kTile = new Float64Array(maxSeqK * D);
  const vTile = new Float64Array(maxSeqK * Dv);
  const qRow = new Float64Array(D);
  const s = new Float64Array(maxSeqK);
  const acc = new Float64Array(Dv);
  const vDescale = params.descale ? params.descale.v : 1;

  for (let b = 0; b < seqs.count; b++) {
    const sq = seqs.seqQ(b);
    const sk = seqs.seqK(b);
    for (let hk = 0; hk < headsKV; hk++) {
      // One kv head serves `group` query heads (GQA): gather its keys and values once.
      gatherRows(kData, params.key.dtype, pb.k, b, hk, sk, D, kTile);
      gatherRows(vData, params.value.dtype, pb.v, b, hk, sk, Dv, vTile);
      for (let h = hk * group; h < (hk + 1) * group; h++) {
        for (let i = 0; i < sq; i++) {
          scores.visible(i, sq, sk);
          const { lo, hi } = scores;
          let lse = -Infinity;
          acc.fill(0);
          if (lo < hi) {
            gather(qData, params.query.dtype, pb.q.row(b, h, i), 1, 0, D, pb.q.colStride, qRow);
            scores.compute(qRow, kTile, D, b, h, i, sq, sk, s);
            const max = rowMax(s, lo, hi);
            // max = -Infinity: every visible key is masked; the row stays 0 with lse -inf (never NaN).
            if (max !== -Infinity) {
              const sum = expRow(s, lo, hi, max);
              lse = max + Math.log(sum);
              // Dropout scales the kept probabilities; lse stays that of the undropped softmax. A
              // dropped weight is 0 * inv, not 0: a row whose sum is NaN stays NaN even where dropout
              // dropped every key it sees (NaN in, NaN out).
              const keep = drop ? drop.keepRow(b, h, i, hi) : null;
              const inv = (drop ? drop.keepScale : 1) / sum;
              for (let j = lo; j < hi; j++) s[j] = keep && keep[j] === 0 ? 0 * inv : s[j]! * inv;
              addWeightedRows(acc, s, vTile, Dv, lo, hi);
              if (vDescale !== 1) for (let c = 0; c < Dv; c++) acc[c] = acc[c]! * vDescale;
            }
          }
          scatterRow(acc, 0, Dv, outData, dtype, outRows.row(b, h, i), outRows.colStride);
          lseData[pb.lseIndex(b, h, i)] = lse;
        }
      }
    }
  }
  return { out, logsumexp };
}

/**
 * A kv-cache call's host work before attention: kNew / vNew appended to the cache, and the query
 * rotated in float64 (the reference keeps it unrounded). Other calls pass through.
 */
function withKvCache(params: SdpaParams): SdpaParams {
  const kv = params.kvCache;
  if (!kv) return params;
  appendToCache(params, kv);
  return kv.rotary ? { ...params, query: rotatedQuery(params, kv, 'float64') } : params;
}
