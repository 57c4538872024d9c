// What forward and backward both derive from SdpaParams: sequences, row addressing of q/k/v, the
// GQA head mapping, the dropout decision, and the shapes of the tensors they allocate.
import { dropoutKeepRow, kvHostCopies, seedKey } from '@attn/core';
import type { SdpaParams, Tensor } from '@attn/core';
import { cachePages } from '../kv-cache/host.js';
import { pagedRowsOf, rowsOf, sequencesOf, varlenPages } from './layout.js';
import type { RowAddressing, Sequences } from './layout.js';

export interface Problem {
  readonly params: SdpaParams;
  readonly seqs: Sequences;
  readonly q: RowAddressing;
  readonly k: RowAddressing;
  readonly v: RowAddressing;
  /** Query heads per key/value head (1 without GQA); query head h reads kv head floor(h / group). */
  readonly group: number;
  /** Longest key sequence: the size of every per-row buffer. */
  readonly maxSeqK: number;
  readonly totalQ: number;
  /** Dense [B, Hq, Sq, Dv] or packed [totalQ, Hq, Dv]. */
  readonly outShape: readonly number[];
  /** Dense [B, Hq, Sq] or varlen [Hq, totalQ]. */
  readonly lseShape: readonly number[];
  /** Index of (b, h, i) in the logsumexp tensor. */
  lseIndex(b: number, h: number, i: number): number;
  /**
   * Rows of a tensor shaped like the query side (out, gradOut, dq) or the key side (dk, dv; packed
   * or dense, never paged: paged K/V is inference only).
   */
  rowsQ(t: Tensor): RowAddressing;
  rowsK(t: Tensor): RowAddressing;
  /** Dropout of the call, or null without dropout. */
  readonly dropout: RowDropout | null;
}

/**
 * Which probabilities of a score row dropout keeps, through core's one Philox mapping, so that every
 * backend drops the same elements. Kept ones are multiplied by keepScale.
 */
export interface RowDropout {
  readonly keepScale: number;
  /** keep[j] = 1 when (b, h, i, j) is kept, for j < seqK; the array is reused by the next call. */
  keepRow(b: number, h: number, i: number, seqK: number): Uint8Array;
}

function rowDropout(params: SdpaParams, maxSeqK: number): RowDropout | null {
  const drop = params.dropout;
  if (!drop) return null;
  const key = seedKey(drop.seed);
  const keep = new Uint8Array(maxSeqK);
  const headsQ = params.headsQ;
  return {
    keepScale: drop.keepScale,
    keepRow: (b, h, i, seqK) => dropoutKeepRow(keep, key, drop.offset, b * headsQ + h, i, seqK, drop.threshold),
  };
}

/** Rows of key or value: a kv cache's pool from each row's first key, paged varlen blocks, or plain rows. */
function kvRows(params: SdpaParams, t: Tensor, startK: ((b: number) => number) | null): RowAddressing {
  const kv = params.kvCache;
  if (kv) return pagedRowsOf(t, cachePages(params, kv), kvHostCopies(kv).keyStart);
  if (params.paged) return pagedRowsOf(t, varlenPages(params, params.paged), null);
  return rowsOf(t, startK);
}

export function problemOf(params: SdpaParams): Problem {
  const seqs = sequencesOf(params);
  const packed = params.varlen !== null;
  const startQ = packed ? seqs.startQ : null;
  const startK = packed ? seqs.startK : null;
  let maxSeqK = 0;
  let totalQ = 0;
  for (let b = 0; b < seqs.count; b++) {
    maxSeqK = Math.max(maxSeqK, seqs.seqK(b));
    totalQ += seqs.seqQ(b);
  }
  const { batch, headsQ, seqQ, headDimV } = params;
  return {
    params,
    seqs,
    q: rowsOf(params.query, startQ),
    k: kvRows(params, params.key, startK),
    v: kvRows(params, params.value, startK),
    group: headsQ / params.headsKV,
    maxSeqK,
    totalQ,
    outShape: packed ? [totalQ, headsQ, headDimV] : [batch, headsQ, seqQ, headDimV],
    lseShape: packed ? [headsQ, totalQ] : [batch, headsQ, seqQ],
    lseIndex: packed ? (b, h, i) => h * totalQ + seqs.startQ(b) + i : (b, h, i) => (b * headsQ + h) * seqQ + i,
    rowsQ: (t) => rowsOf(t, startQ),
    rowsK: (t) => rowsOf(t, startK),
    dropout: rowDropout(params, maxSeqK),
  };
}
