// The argument arrays of the kv-cache append and rotary kernel (native/include/attn/kv_append.cuh),
// which every CUDA backend compiles into its addon and calls as kvAppend(ptrs, nums): one packer, so
// that cuda-math and flash-cuda append, rotate and address caches identically. Pure (no native call):
// tested on the CPU with a fake device runtime.
import type { DType, KvCacheParams, SdpaParams, Tensor } from '@attn/core';

/** kv_append.cuh's Ptr enum, in order. */
export const KV_PTR = Object.freeze({
  q: 0,
  qOut: 1,
  kNew: 2,
  vNew: 3,
  kCache: 4,
  vCache: 5,
  cos: 6,
  sin: 7,
  cacheSeqlens: 8,
  cacheBatchIdx: 9,
  blockTable: 10,
  rowTable: 11,
  stream: 12,
  count: 13,
});

/** kv_append.cuh's Num enum, in order (strides: 4 per 4-d tensor, 2 per rotary table). */
export const KV_NUM = Object.freeze({
  dtype: 0,
  batch: 1,
  seqQ: 2,
  headsQ: 3,
  headsKV: 4,
  headDim: 5,
  headDimV: 6,
  newLen: 7,
  numBlocks: 8,
  blockSize: 9,
  maxBlocks: 10,
  capacity: 11,
  rotRows: 12,
  rotHalf: 13,
  interleaved: 14,
  qPerRow: 15,
  qStrides: 16,
  kNewStrides: 20,
  vNewStrides: 24,
  kCacheStrides: 28,
  vCacheStrides: 32,
  cosStrides: 36,
  sinStrides: 38,
  count: 40,
});

/** attn/tensor_ref.h's dtype codes of the float dtypes. */
const DTYPE_CODE: Partial<Record<DType, number>> = { float64: 0, float32: 1, float16: 2, bfloat16: 3 };

export interface KvAppendArgs {
  readonly ptrs: BigUint64Array;
  readonly nums: Float64Array;
}

/** What the kernel writes besides the caches. */
export interface KvAppendOutputs {
  /** Contiguous [B, Sq, Hq, D] in the call's dtype: q rotated (or copied without rotary); null: not written. */
  readonly qOut: Tensor | null;
  /** Contiguous caches: int32 [B], the cache row of each batch row (a one-column block table); null: not written. */
  readonly rowTable: Tensor | null;
  /** cudaStream_t the kernel is queued on. */
  readonly stream: bigint;
}

function putStrides(nums: Float64Array, at: number, t: Tensor | null, n: number): void {
  for (let d = 0; d < n; d++) nums[at + d] = t ? t.strides[d]! : 0;
}

/**
 * The kernel's arguments for a kv-cache call: the user's q ([B, Sq, Hq, D], params.query is its
 * [B, Hq, Sq, D] view), kNew / vNew, the caches as pools (a contiguous cache [Bc, Sc, Hk, C] is Bc
 * blocks of Sc), and the index tensors by device address (read and clamped by the kernel).
 */
export function kvAppendArgs(p: SdpaParams, out: KvAppendOutputs): KvAppendArgs {
  const kv: KvCacheParams | null = p.kvCache;
  if (!kv) throw new TypeError('kvAppendArgs takes a sdpaKvCache call');
  const ptrs = new BigUint64Array(KV_PTR.count);
  const nums = new Float64Array(KV_NUM.count);
  const q = p.query.transpose(1, 2); // the user's [B, Sq, Hq, D]
  const ptr = (t: Tensor | null) => (t ? t.dataPointer() : 0n);
  ptrs[KV_PTR.q] = ptr(q);
  ptrs[KV_PTR.qOut] = ptr(out.qOut);
  ptrs[KV_PTR.kNew] = ptr(kv.kNew);
  ptrs[KV_PTR.vNew] = ptr(kv.vNew);
  ptrs[KV_PTR.kCache] = ptr(kv.kCache);
  ptrs[KV_PTR.vCache] = ptr(kv.vCache);
  ptrs[KV_PTR.cos] = ptr(kv.rotary?.cos ?? null);
  ptrs[KV_PTR.sin] = ptr(kv.rotary?.sin ?? null);
  ptrs[KV_PTR.cacheSeqlens] = ptr(kv.cacheSeqlens);
  ptrs[KV_PTR.cacheBatchIdx] = ptr(kv.cacheBatchIdx);
  ptrs[KV_PTR.blockTable] = ptr(p.paged?.blockTable ?? null);
  ptrs[KV_PTR.rowTable] = ptr(out.rowTable);
  ptrs[KV_PTR.stream] = out.stream;

  const code = DTYPE_CODE[p.dtype];
  if (code === undefined) throw new TypeError(`kvAppendArgs: no kernel for dtype ${p.dtype}`);
  nums[KV_NUM.dtype] = code;
  nums[KV_NUM.batch] = p.batch;
  nums[KV_NUM.seqQ] = p.seqQ;
  nums[KV_NUM.headsQ] = p.headsQ;
  nums[KV_NUM.headsKV] = p.headsKV;
  nums[KV_NUM.headDim] = p.headDim;
  nums[KV_NUM.headDimV] = p.headDimV;
  nums[KV_NUM.newLen] = kv.newLen;
  const [n, s] = kv.kCache.shape as [number, number];
  nums[KV_NUM.numBlocks] = n;
  nums[KV_NUM.blockSize] = s;
  nums[KV_NUM.maxBlocks] = p.paged ? p.paged.maxBlocksPerSeq : 1;
  nums[KV_NUM.capacity] = kv.capacity;
  const rot = kv.rotary;
  nums[KV_NUM.rotRows] = rot ? rot.cos.shape[0]! : 0;
  nums[KV_NUM.rotHalf] = rot ? rot.dim / 2 : 0;
  nums[KV_NUM.interleaved] = rot?.interleaved ? 1 : 0;
  nums[KV_NUM.qPerRow] = rot?.qPerRow ? 1 : 0;
  putStrides(nums, KV_NUM.qStrides, q, 4);
  putStrides(nums, KV_NUM.kNewStrides, kv.kNew, 4);
  putStrides(nums, KV_NUM.vNewStrides, kv.vNew, 4);
  putStrides(nums, KV_NUM.kCacheStrides, kv.kCache, 4);
  putStrides(nums, KV_NUM.vCacheStrides, kv.vCache, 4);
  putStrides(nums, KV_NUM.cosStrides, rot?.cos ?? null, 2);
  putStrides(nums, KV_NUM.sinStrides, rot?.sin ?? null, 2);
  return { ptrs, nums };
}
