// The host side of a sdpaKvCache call, shared by cpu-math and cpu-flash so that both leave the cache
// in exactly the same state: the cache seen as a pool of blocks (a contiguous cache is a pool of Bc
// blocks of Sc keys whose table is the cache row of each batch row), the append of kNew / vNew into
// it (kNew rotated in float64, then rounded once to the cache's dtype), and the rotated query.
import { empty, hostIndexCopies, kvHostCopies } from '@attn/core';
import type { FloatDType, KvCacheParams, KvCacheRotary, SdpaParams, Tensor } from '@attn/core';
import { gather, scatterRow } from '../math/host-io.js';

/** Key position pos of batch row b is row pos % blockSize of block table[b * tableStride + floor(pos / blockSize)]. */
export interface CachePages {
  readonly table: Int32Array;
  readonly tableStride: number;
  readonly blockSize: number;
  readonly numBlocks: number;
}

export function cachePages(p: SdpaParams, kv: KvCacheParams): CachePages {
  if (p.paged) {
    const { maxBlocksPerSeq, blockSize, numBlocks } = p.paged;
    return { table: hostIndexCopies(p).blockTable!, tableStride: maxBlocksPerSeq, blockSize, numBlocks };
  }
  const [rows, seq] = kv.kCache.shape as [number, number];
  return { table: kvHostCopies(kv).cacheRows!, tableStride: 1, blockSize: seq, numBlocks: rows };
}

/** Element offset of (row b, key position pos, head h, column 0) in a cache pool tensor [N, blockSize, H, C]. */
export function cacheOffset(t: Tensor, pages: CachePages, b: number, pos: number, h: number): number {
  const [sn, sr, sh] = t.strides as [number, number, number, number];
  const block = pages.table[b * pages.tableStride + Math.floor(pos / pages.blockSize)]!;
  return t.offset + block * sn + (pos % pages.blockSize) * sr + h * sh;
}

/** x[0, dim) rotated in place at table row pos (FlashAttention's apply_rotary_emb). */
export function rotate(x: Float64Array, rot: KvCacheRotary, cos: Float64Array, sin: Float64Array, pos: number): void {
  const half = rot.dim / 2;
  for (let i = 0; i < half; i++) {
    const c = cos[pos * half + i]!;
    const s = sin[pos * half + i]!;
    const [a, b] = rot.interleaved ? [2 * i, 2 * i + 1] : [i, i + half];
    const x1 = x[a]!;
    const x2 = x[b]!;
    x[a] = x1 * c - x2 * s;
    x[b] = x1 * s + x2 * c;
  }
}

/** The rotary tables as float64 [R * dim / 2] (row-major), or null without rotary. */
function tables(rot: KvCacheRotary | null): { cos: Float64Array; sin: Float64Array } | null {
  return rot ? { cos: rot.cos.contiguous().toFloat64Array(), sin: rot.sin.contiguous().toFloat64Array() } : null;
}

/** Writes kNew (rotated) and vNew into the cache at positions seqlens[b] + i: the call's one mutation. */
export function appendToCache(p: SdpaParams, kv: KvCacheParams): void {
  if (kv.newLen === 0) return;
  const pages = cachePages(p, kv);
  const { seqlens } = kvHostCopies(kv);
  const rot = kv.rotary;
  const tab = tables(rot);
  const row = new Float64Array(Math.max(p.headDim, p.headDimV));
  const put = (src: Tensor, dst: Tensor, cols: number, rotateIt: boolean) => {
    const [sb, si, sh, sd] = src.strides as [number, number, number, number];
    const from = src.hostData();
    const to = dst.hostData();
    const dStride = dst.strides[3]!;
    for (let b = 0; b < p.batch; b++)
      for (let i = 0; i < kv.newLen; i++) {
        const pos = seqlens[b]! + i;
        for (let h = 0; h < p.headsKV; h++) {
          gather(from, src.dtype, src.offset + b * sb + i * si + h * sh, 1, 0, cols, sd, row);
          if (rotateIt && rot && tab) rotate(row, rot, tab.cos, tab.sin, pos);
          scatterRow(row, 0, cols, to, dst.dtype, cacheOffset(dst, pages, b, pos, h), dStride);
        }
      }
  };
  put(kv.kNew!, kv.kCache, p.headDim, true);
  put(kv.vNew!, kv.vCache, p.headDimV, false);
}

/**
 * q rotated at its positions (rotary.qPerRow: seqlens[b] + i, else seqlens[b]), as a new tensor of
 * `dtype` with the query's logical shape [B, Hq, Sq, D] (storage [B, Sq, Hq, D]); q itself without rotary.
 */
export function rotatedQuery(p: SdpaParams, kv: KvCacheParams, dtype: FloatDType): Tensor {
  const rot = kv.rotary;
  const tab = tables(rot);
  if (!rot || !tab) return p.query;
  const { seqlens } = kvHostCopies(kv);
  const q = p.query;
  const [B, H, S, D] = q.shape as [number, number, number, number];
  const [sb, sh, ss, sd] = q.strides as [number, number, number, number];
  const out = empty([B, S, H, D], { dtype });
  const from = q.hostData();
  const to = out.hostData();
  const row = new Float64Array(D);
  for (let b = 0; b < B; b++)
    for (let i = 0; i < S; i++) {
      const pos = seqlens[b]! + (rot.qPerRow ? i : 0);
      for (let h = 0; h < H; h++) {
        gather(from, q.dtype, q.offset + b * sb + h * sh + i * ss, 1, 0, D, sd, row);
        rotate(row, rot, tab.cos, tab.sin, pos);
        scatterRow(row, 0, D, to, dtype, ((b * S + i) * H + h) * D, 1);
      }
    }
  return out.transpose(1, 2);
}
