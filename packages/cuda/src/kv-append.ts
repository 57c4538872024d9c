// The argument arrays of the kv-cache append and rotary kernel (native/include/attn/kv_append.cuh),
// which every CUDA backend compiles into its addon and calls as kvAppend(ptrs, nums): one packer, so
// that cuda-math and flash-cuda append, rotate and address caches identically. Pure (no native call):
// tested on the CPU with a fake device runtime.
import type { KvCacheParams, SdpaParams, Tensor } from '@attn/core';
import { abiLayout, type AbiArrays } from './abi.js';
import { TENSOR_DTYPE_CODE } from './tensor-dtype.js';

// The layout of attn/kv_append_abi.h (the one argument ABI, abi.ts): names in the header's order, grouped by
// meaning as its enums; kv-append.test.ts checks them against the header. Strides: 4 per 4-d tensor, 2 per
// rotary table, from the slot of their first.
// prettier-ignore
export const KV_ABI = abiLayout(
  [
    'q', 'qOut', 'kNew', 'vNew', 'kCache', 'vCache', 'cos', 'sin', 'cacheSeqlens', 'cacheBatchIdx', 'blockTable',
    'rowTable', 'stream',
  ],
  [
    'dtype', 'batch', 'seqQ', 'headsQ', 'headsKV', 'headDim', 'headDimV', 'newLen',
    'numBlocks', 'blockSize', 'maxBlocks', 'capacity', 'rotRows', 'rotHalf', 'interleaved', 'qPerRow',
    'qS0', 'qS1', 'qS2', 'qS3',
    'kNewS0', 'kNewS1', 'kNewS2', 'kNewS3',
    'vNewS0', 'vNewS1', 'vNewS2', 'vNewS3',
    'kCacheS0', 'kCacheS1', 'kCacheS2', 'kCacheS3',
    'vCacheS0', 'vCacheS1', 'vCacheS2', 'vCacheS3',
    'cosS0', 'cosS1', 'sinS0', 'sinS1',
  ],
);
export const KV_PTR = KV_ABI.ptr;
export const KV_NUM = KV_ABI.num;

/** The kernel's two argument arrays. */
export type KvAppendArgs = AbiArrays;

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
  const { ptrs, nums } = KV_ABI.arrays();
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

  nums[KV_NUM.dtype] = TENSOR_DTYPE_CODE[p.dtype];
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
  putStrides(nums, KV_NUM.qS0, q, 4);
  putStrides(nums, KV_NUM.kNewS0, kv.kNew, 4);
  putStrides(nums, KV_NUM.vNewS0, kv.vNew, 4);
  putStrides(nums, KV_NUM.kCacheS0, kv.kCache, 4);
  putStrides(nums, KV_NUM.vCacheS0, kv.vCache, 4);
  putStrides(nums, KV_NUM.cosS0, rot?.cos ?? null, 2);
  putStrides(nums, KV_NUM.sinS0, rot?.sin ?? null, 2);
  return { ptrs, nums };
}
