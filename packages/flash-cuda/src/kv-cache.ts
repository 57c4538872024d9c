// sdpaKvCache on flash-cuda: @attn/cuda's shared append and rotary kernel (kNew / vNew into the cache,
// q rotated into a [B, Sq, Hq, D] scratch, a contiguous cache's rows into a one-column block table),
// then the forward with a dense query over the paged cache: row b's keys are table positions
// [leftpadK[b], cacheSeqlens[b] + newLen), read and clamped on the device (native/src/common/seq_extents.h),
// so a captured call replays for any lengths that fit its caches.
import {
  DeviceError,
  empty,
  emptyOutput,
  OUTPUT_NAMES,
  type ForwardOutputs,
  type SdpaParams,
  type Tensor,
} from '@attn/core';
import { currentStream, kvAppendArgs } from '@attn/cuda';
import { argArrays, NUM, PTR } from './abi.js';
import { cachedPlan, factsOf, launchForward, packArgs, requireAddon, rethrow, strides3 } from './forward.js';

const callArgs = argArrays();

/**
 * The forward's abi arrays for a kv-cache call whose rotated query is qRot [B, Sq, Hq, D] and whose
 * contiguous cache rows are rowTable (null for paged caches). Exported for tests.
 */
export function packKvCacheArgs(
  p: SdpaParams,
  qRot: Tensor,
  rowTable: Tensor | null,
  facts: Parameters<typeof packArgs>[1],
  into?: { ptrs: BigUint64Array; nums: Float64Array },
): { ptrs: BigUint64Array; nums: Float64Array } {
  const kv = p.kvCache;
  if (!kv) throw new TypeError('packKvCacheArgs takes a sdpaKvCache call');
  const { ptrs, nums } = packArgs({ ...p, query: qRot.transpose(1, 2) }, facts, into);
  // The caches as pools [N, blockSize, Hk, C]: head and row strides inside a page, the page stride apart.
  [nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride]] = strides3(p.key, true);
  [nums[NUM.vBatchStride], nums[NUM.vHeadStride], nums[NUM.vRowStride]] = strides3(p.value, true);
  const [numPages, pageSize] = kv.kCache.shape as [number, number];
  nums[NUM.pageSize] = pageSize;
  nums[NUM.numPages] = numPages;
  nums[NUM.maxPagesPerSeq] = p.paged ? p.paged.maxBlocksPerSeq : 1;
  nums[NUM.kPageStride] = p.key.strides[0]!;
  nums[NUM.vPageStride] = p.value.strides[0]!;
  const table = p.paged ? p.paged.blockTable : rowTable;
  if (!table) throw new TypeError('a contiguous cache needs its row table');
  ptrs[PTR.blockTable] = table.dataPointer();
  nums[NUM.kvCache] = 1;
  nums[NUM.kvNewLen] = kv.newLen;
  ptrs[PTR.kvSeqlens] = kv.cacheSeqlens ? kv.cacheSeqlens.dataPointer() : 0n;
  ptrs[PTR.kvLeftpad] = kv.leftpadK ? kv.leftpadK.dataPointer() : 0n;
  return { ptrs, nums };
}

export function flashKvCacheForward(p: SdpaParams): ForwardOutputs {
  const a = requireAddon();
  if (!a.kvAppend)
    throw new DeviceError(
      'ATTN_UNAVAILABLE',
      'flash-cuda: the addon predates sdpaKvCache; rebuild it (pnpm build:native)',
    );
  const device = p.device;
  const { batch: B, seqQ: Sq, headsQ: Hq } = p;
  const stream = currentStream(device.index);
  const scratch: Tensor[] = [];
  const out = emptyOutput(OUTPUT_NAMES.out, [B, Sq, Hq, p.headDimV], { dtype: p.dtype, device });
  let lse: Tensor | null = null;
  try {
    lse = emptyOutput(OUTPUT_NAMES.logsumexp, [B, Hq, Sq], { dtype: 'float32', device });
    const qRot = empty([B, Sq, Hq, p.headDim], { dtype: p.dtype, device });
    scratch.push(qRot);
    const rowTable = p.paged ? null : empty([B], { dtype: 'int32', device });
    if (rowTable) scratch.push(rowTable);
    const append = kvAppendArgs(p, { qOut: qRot, rowTable, stream });
    try {
      a.kvAppend(append.ptrs, append.nums, device.index);
    } catch (e) {
      rethrow(e);
    }

    const { ptrs, nums } = packKvCacheArgs(p, qRot, rowTable, factsOf(device.index), callArgs);
    const plan = cachedPlan(a, ptrs, nums);
    const outView = out.transpose(1, 2); // [B, Hq, Sq, Dv]
    launchForward(
      a,
      p,
      ptrs,
      nums,
      plan,
      { q: qRot, out: outView, lse, varlen: false, rows: B * Hq * Sq, lseStrides: [Hq * Sq, Sq] },
      scratch,
    );
    return { out: outView, logsumexp: lse };
  } catch (e) {
    out.dispose();
    lse?.dispose();
    throw e;
  } finally {
    // Stream-ordered frees: reused only by work queued after the kernels on this stream.
    for (const t of scratch) t.dispose();
  }
}
