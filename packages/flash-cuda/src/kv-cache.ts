// sdpaKvCache on flash-cuda: the forward with a dense query over the cache as a paged pool: row b's keys are
// table positions [leftpadK[b], cacheSeqlens[b] + newLen), read and clamped on the device
// (native/src/common/seq_extents.h), so a captured call replays for any lengths that fit its caches.
// Where the plan fuses it (fusedKvAppend: decode shapes, few appended keys; native/src/dispatch.cu) that one
// launch also appends kNew / vNew into the cache and rotates q and kNew (native/src/fwd/kv_fused.h), and a
// contiguous cache is read as dense rows of its pool. Elsewhere @attn/cuda's shared append and rotary kernel
// runs first (kNew / vNew into the cache, q rotated into a [B, Sq, Hq, D] scratch, a contiguous cache's rows
// into a one-column block table) and the forward reads what it wrote. Both give the same bits.
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
import {
  applyOverrides,
  cachedPlan,
  factsOf,
  type FlashOverrides,
  launchForward,
  packArgs,
  requireAddon,
  rethrow,
  strides3,
} from './forward.js';

const callArgs = argArrays();

/** What the forward reads besides the call's tensors. */
export interface KvCacheIo {
  /** [B, Sq, Hq, D]: the user's q (fused: rotated as the forward loads it), or the append kernel's rotated copy. */
  readonly q: Tensor;
  /** Contiguous caches after the append kernel: its one-column block table of cache rows; null otherwise. */
  readonly rowTable: Tensor | null;
  /** The forward appends kNew / vNew and rotates q and kNew itself (the plan's fusedKvAppend). */
  readonly fused: boolean;
}

function putStrides(nums: Float64Array, at: number, t: Tensor | null, n: number): void {
  for (let d = 0; d < n; d++) nums[at + d] = t ? t.strides[d]! : 0;
}

/** The forward's abi arrays for a kv-cache call (see KvCacheIo). Exported for tests. */
export function packKvCacheArgs(
  p: SdpaParams,
  io: KvCacheIo,
  facts: Parameters<typeof packArgs>[1],
  into?: { ptrs: BigUint64Array; nums: Float64Array },
): { ptrs: BigUint64Array; nums: Float64Array } {
  const kv = p.kvCache;
  if (!kv) throw new TypeError('packKvCacheArgs takes a sdpaKvCache call');
  const { ptrs, nums } = packArgs({ ...p, query: io.q.transpose(1, 2) }, facts, into);
  // The caches as pools [N, blockSize, Hk, C]: head and row strides inside a page, the page stride apart.
  [nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride]] = strides3(p.key, true);
  [nums[NUM.vBatchStride], nums[NUM.vHeadStride], nums[NUM.vRowStride]] = strides3(p.value, true);
  const [numPages, pageSize] = kv.kCache.shape as [number, number];
  nums[NUM.pageSize] = pageSize;
  nums[NUM.numPages] = numPages;
  nums[NUM.maxPagesPerSeq] = p.paged ? p.paged.maxBlocksPerSeq : 1;
  nums[NUM.kPageStride] = p.key.strides[0]!;
  nums[NUM.vPageStride] = p.value.strides[0]!;
  nums[NUM.kvCache] = 1;
  nums[NUM.kvNewLen] = kv.newLen;
  ptrs[PTR.kvSeqlens] = kv.cacheSeqlens ? kv.cacheSeqlens.dataPointer() : 0n;
  ptrs[PTR.kvLeftpad] = kv.leftpadK ? kv.leftpadK.dataPointer() : 0n;
  if (!io.fused) {
    const table = p.paged ? p.paged.blockTable : io.rowTable;
    if (!table) throw new TypeError('a contiguous cache needs its row table');
    ptrs[PTR.blockTable] = table.dataPointer();
    return { ptrs, nums };
  }
  // Fused: a contiguous cache is read as dense rows (no table), row b from pool row cacheBatchIdx[b] (or b).
  nums[NUM.kvFused] = 1;
  ptrs[PTR.blockTable] = p.paged ? p.paged.blockTable.dataPointer() : 0n;
  ptrs[PTR.kvBatchIdx] = kv.cacheBatchIdx ? kv.cacheBatchIdx.dataPointer() : 0n;
  ptrs[PTR.kvKNew] = kv.kNew ? kv.kNew.dataPointer() : 0n;
  ptrs[PTR.kvVNew] = kv.vNew ? kv.vNew.dataPointer() : 0n;
  putStrides(nums, NUM.kvKNewS0, kv.kNew, 4);
  putStrides(nums, NUM.kvVNewS0, kv.vNew, 4);
  const rot = kv.rotary;
  if (rot) {
    ptrs[PTR.rotaryCos] = rot.cos.dataPointer();
    ptrs[PTR.rotarySin] = rot.sin.dataPointer();
    nums[NUM.rotaryRows] = rot.cos.shape[0]!;
    nums[NUM.rotaryHalf] = rot.dim / 2;
    nums[NUM.rotaryInterleaved] = rot.interleaved ? 1 : 0;
    nums[NUM.rotaryQPerRow] = rot.qPerRow ? 1 : 0;
    putStrides(nums, NUM.rotaryCosS0, rot.cos, 2);
    putStrides(nums, NUM.rotarySinS0, rot.sin, 2);
  }
  return { ptrs, nums };
}

/** Test and bench overrides of a kv-cache call (FlashOverrides', plus the path). */
export interface KvCacheOverrides extends FlashOverrides {
  /** Run the separate append kernel where the plan would fuse the append (tests compare the two paths). */
  readonly separateAppend?: boolean;
}

/** What the addon would run for this kv-cache call (kernel, splits, whether the forward appends). */
export function kvCachePlanFor(
  p: SdpaParams,
  opts: KvCacheOverrides = {},
): { kernel: string; numSplits: number; packGqa: boolean; fusedKvAppend: boolean } {
  const a = requireAddon();
  const { ptrs, nums } = packKvCacheArgs(
    p,
    { q: p.query.transpose(1, 2), rowTable: null, fused: true },
    factsOf(p.device.index),
  );
  applyOverrides(a, nums, opts);
  try {
    const plan = a.plan(nums, ptrs);
    return {
      kernel: plan.kernel,
      numSplits: plan.numSplits,
      packGqa: plan.packGqa,
      fusedKvAppend: plan.fusedKvAppend && !opts.separateAppend,
    };
  } catch (e) {
    rethrow(e);
  }
}

export function flashKvCacheForward(p: SdpaParams, opts: KvCacheOverrides = {}): ForwardOutputs {
  const a = requireAddon();
  const device = p.device;
  const { batch: B, seqQ: Sq, headsQ: Hq } = p;
  const facts = factsOf(device.index);
  const userQ = p.query.transpose(1, 2); // the user's [B, Sq, Hq, D]
  let { ptrs, nums } = packKvCacheArgs(p, { q: userQ, rowTable: null, fused: true }, facts, callArgs);
  applyOverrides(a, nums, opts);
  let plan = cachedPlan(a, ptrs, nums);
  const fused = plan.fusedKvAppend && !opts.separateAppend;
  const scratch: Tensor[] = [];
  const out = emptyOutput(OUTPUT_NAMES.out, [B, Sq, Hq, p.headDimV], { dtype: p.dtype, device });
  let lse: Tensor | null = null;
  try {
    lse = emptyOutput(OUTPUT_NAMES.logsumexp, [B, Hq, Sq], { dtype: 'float32', device });
    let q = userQ;
    if (!fused) {
      if (!a.kvAppend)
        throw new DeviceError(
          'ATTN_UNAVAILABLE',
          'flash-cuda: the addon predates sdpaKvCache; rebuild it (pnpm build:native)',
        );
      q = empty([B, Sq, Hq, p.headDim], { dtype: p.dtype, device });
      scratch.push(q);
      const rowTable = p.paged ? null : empty([B], { dtype: 'int32', device });
      if (rowTable) scratch.push(rowTable);
      const append = kvAppendArgs(p, { qOut: q, rowTable, stream: currentStream(device.index) });
      try {
        a.kvAppend(append.ptrs, append.nums, device.index);
      } catch (e) {
        rethrow(e);
      }
      ({ ptrs, nums } = packKvCacheArgs(p, { q, rowTable, fused: false }, facts, callArgs));
      applyOverrides(a, nums, opts);
      plan = cachedPlan(a, ptrs, nums); // the same plan slots: the cached plan
    }
    const outView = out.transpose(1, 2); // [B, Hq, Sq, Dv]
    launchForward(
      a,
      p,
      ptrs,
      nums,
      plan,
      { q, out: outView, lse, varlen: false, rows: B * Hq * Sq, lseStrides: [Hq * Sq, Sq] },
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
