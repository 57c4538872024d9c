// One forward call: arguments packed into the abi arrays, the split count planned by the addon (split-KV
// partials in a scratch buffer), one launch (two with split-KV, unless the plan merges the decode kernel's
// splits in a cluster) on @attn/cuda's current stream. Outside
// graph capture the addon allocates out, lse and the partials from @attn/cuda's caching allocator and
// launches in the same N-API call; during a capture (whose allocations the JS runtime tracks) and when that
// allocation fails, they are allocated through @attn/cuda's API, whose errors name the tensor and the fix.
import {
  AttnInputError,
  DeviceError,
  DTYPE_BYTES,
  empty,
  emptyOutput,
  forwardOutput,
  type ForwardOutputs,
  kernelWindow,
  OUTPUT_NAMES,
  type SdpaParams,
  Tensor,
} from '@attn/core';
import { adoptBlock, allocatorApi, currentStream, deviceProperties } from '@attn/cuda';
import { ALLOC, argArrays, NUM, PTR } from './abi.js';
import { kernelFamilyOf } from './kernels.js';
import { addon, availability, type FlashAddon, type FlashPlan } from './native.js';

const U64 = (1n << 64n) - 1n;

export function requireAddon(): FlashAddon {
  const a = addon();
  const av = availability();
  if (!a || !av.ok)
    throw new DeviceError('ATTN_UNAVAILABLE', `flash-cuda is unavailable${av.ok ? '' : `: ${av.reason}`}`);
  return a;
}

interface DeviceFacts {
  readonly smCount: number;
  readonly smemOptin: number;
  readonly major: number;
  readonly minor: number;
}
const deviceFacts = new Map<number, DeviceFacts>();
export function factsOf(index: number): DeviceFacts {
  let f = deviceFacts.get(index);
  if (!f) {
    const p = deviceProperties(index);
    f = { smCount: p.multiProcessorCount, smemOptin: p.sharedMemoryPerBlockOptin, major: p.major, minor: p.minor };
    deviceFacts.set(index, f);
  }
  return f;
}

/** Turns an addon error into core's error classes (the message names the kernel or the argument). */
export function rethrow(e: unknown): never {
  const code = (e as { code?: unknown })?.code;
  const msg = e instanceof Error ? e.message : String(e);
  if (code === 'ATTN_FLASH_ARGUMENT') throw new AttnInputError('ATTN_FLASH_ARGUMENT', msg);
  throw new DeviceError(typeof code === 'string' ? code : 'ATTN_CUDA_ERROR', msg, { cause: e });
}

export function strides3(t: Tensor, varlen: boolean): [number, number, number] {
  // [batch, head, row]; varlen tensors are [total, H, D]: rows start at cuSeqlens[b]; paged pools are
  // [numBlocks, blockSize, H, D]: head and row strides inside a page (the page stride goes apart).
  if (varlen && t.rank === 4) return [0, t.strides[2]!, t.strides[1]!];
  return varlen ? [0, t.strides[1]!, t.strides[0]!] : [t.strides[0]!, t.strides[1]!, t.strides[2]!];
}

/**
 * Packs the call into the abi arrays (no pointers to outputs yet). Exported for tests. `into`: arrays to
 * reuse (zeroed here) instead of fresh ones.
 */
export function packArgs(
  p: SdpaParams,
  facts: DeviceFacts,
  into?: { ptrs: BigUint64Array; nums: Float64Array },
): { ptrs: BigUint64Array; nums: Float64Array } {
  let ptrs: BigUint64Array, nums: Float64Array;
  if (into) {
    ({ ptrs, nums } = into);
    ptrs.fill(0n);
    nums.fill(0);
  } else {
    ({ ptrs, nums } = argArrays());
  }
  const varlen = p.varlen !== null;
  nums[NUM.isBf16] = p.dtype === 'bfloat16' ? 1 : 0; // fp8 calls: the output's dtype, bf16
  if (p.descale) {
    // float8_e4m3 q, k, v (their strides below are in bytes) and the factors that dequantize them.
    nums[NUM.fp8] = 1;
    nums[NUM.descaleQ] = p.descale.q;
    nums[NUM.descaleK] = p.descale.k;
    nums[NUM.descaleV] = p.descale.v;
  }
  nums[NUM.batch] = p.batch;
  nums[NUM.headsQ] = p.headsQ;
  nums[NUM.headsK] = p.headsKV;
  nums[NUM.seqQ] = p.seqQ;
  nums[NUM.seqK] = p.seqK;
  nums[NUM.headDim] = p.headDim;
  nums[NUM.totalQ] = varlen ? p.query.shape[0]! : -1;
  [nums[NUM.qBatchStride], nums[NUM.qHeadStride], nums[NUM.qRowStride]] = strides3(p.query, varlen);
  [nums[NUM.kBatchStride], nums[NUM.kHeadStride], nums[NUM.kRowStride]] = strides3(p.key, varlen);
  [nums[NUM.vBatchStride], nums[NUM.vHeadStride], nums[NUM.vRowStride]] = strides3(p.value, varlen);
  nums[NUM.scale] = p.scale;
  nums[NUM.causal] = p.causal ? 1 : 0;
  nums[NUM.lowerRight] = p.alignment === 'lowerRight' ? 1 : 0;
  // A side that reaches every key is unbounded (-1): the kernel's window counters are 32-bit.
  const window = kernelWindow(p);
  nums[NUM.windowLeft] = window.left;
  nums[NUM.windowRight] = window.right;
  nums[NUM.softcap] = p.softcap;
  if (p.alibiSlopes) {
    ptrs[PTR.alibi] = p.alibiSlopes.dataPointer();
    nums[NUM.alibiBatchStride] = p.alibiSlopes.rank === 2 ? p.alibiSlopes.strides[0]! : 0;
  }
  if (p.dropout) {
    nums[NUM.dropout] = 1;
    nums[NUM.dropoutThreshold] = p.dropout.threshold;
    nums[NUM.dropoutKeepScale] = p.dropout.keepScale;
    nums[NUM.dropoutOffset] = p.dropout.offset;
    ptrs[PTR.seed] = BigInt.asUintN(64, p.dropout.seed) & U64;
  }
  if (varlen) {
    ptrs[PTR.cuSeqlensQ] = p.varlen!.cuSeqlensQ.dataPointer();
    ptrs[PTR.cuSeqlensK] = p.varlen!.cuSeqlensK.dataPointer();
    // The kernels clamp the device-read offsets to the packed rows (the replay rule, native/src/common/seq_extents.h).
    nums[NUM.totalK] = p.paged ? 0 : p.key.shape[0]!;
  }
  // Paged K/V: pools [numBlocks, blockSize, Hk, D], the table read on the device (core checked the
  // entries each sequence reads; the kernels clamp them too).
  if (p.paged) {
    ptrs[PTR.blockTable] = p.paged.blockTable.dataPointer();
    nums[NUM.pageSize] = p.paged.blockSize;
    nums[NUM.numPages] = p.paged.numBlocks;
    nums[NUM.maxPagesPerSeq] = p.paged.maxBlocksPerSeq;
    nums[NUM.kPageStride] = p.key.strides[0]!;
    nums[NUM.vPageStride] = p.value.strides[0]!;
  }
  // Keys used per batch row, read by the kernels on the device (core checked each count on the host).
  if (p.sequsedK) ptrs[PTR.sequsedK] = p.sequsedK.tensor.dataPointer();
  nums[NUM.device] = p.device.index;
  nums[NUM.smCount] = facts.smCount;
  nums[NUM.smemOptin] = facts.smemOptin;
  nums[NUM.ccMajor] = facts.major;
  nums[NUM.ccMinor] = facts.minor;
  nums[NUM.numSplits] = 0; // 0: the addon's heuristic decides
  nums[NUM.kernel] = -1; // -1: the addon picks the tile configuration
  nums[NUM.kernelFamily] = kernelFamilyOf(p); // the call's kernel option (kernels.ts); backward reads it too
  // The plan reads the alignment (the TMA rule, native/src/tma_declines.h), so it is set before any plan: over q, k, v
  // and a given out (a fresh out starts on an allocator block). forwardAllocating narrows it by out's strides;
  // launchForward checks again what it launches on (the kv-cache path's q may be a rotated copy).
  nums[NUM.aligned16] = aligned16(p, p.out ? [p.query, p.key, p.value, p.out] : [p.query, p.key, p.value], nums)
    ? 1
    : 0;
  return { ptrs, nums };
}

/** q's, k's and v's strides: what alignment and the TMA's tensor maps read of the inputs. */
const QKV_STRIDE_SLOTS = [
  NUM.qBatchStride,
  NUM.qHeadStride,
  NUM.qRowStride,
  NUM.kBatchStride,
  NUM.kHeadStride,
  NUM.kRowStride,
  NUM.vBatchStride,
  NUM.vHeadStride,
  NUM.vRowStride,
] as const;

const STRIDE_SLOTS = [
  ...QKV_STRIDE_SLOTS,
  NUM.oBatchStride,
  NUM.oHeadStride,
  NUM.oRowStride,
  NUM.kPageStride,
  NUM.vPageStride,
] as const;

/** out's strides are multiples of 8 elements (16 bytes of a 16-bit dtype). */
function outStridesAligned16(nums: Float64Array): boolean {
  return nums[NUM.oBatchStride]! % 8 === 0 && nums[NUM.oHeadStride]! % 8 === 0 && nums[NUM.oRowStride]! % 8 === 0;
}

/** 16-byte loads and stores are possible: base addresses 16-byte aligned, strides and D multiples of 8. */
export function aligned16(p: SdpaParams, tensors: readonly Tensor[], nums: Float64Array): boolean {
  if (p.headDim % 8 !== 0) return false;
  for (const t of tensors) if (t.dataPointer() % 16n !== 0n) return false;
  for (const slot of STRIDE_SLOTS) if (nums[slot]! % 8 !== 0) return false;
  return true;
}

/**
 * Overrides for tests that compare two calls on one tile (e.g. paged against packed K/V bit for bit): a
 * fixed split count, a tile configuration by name. Users choose a kernel family with the `kernel` call
 * option instead (kernels.ts).
 */
export interface FlashOverrides {
  readonly numSplits?: number;
  /** A name from buildInfo().kernelNames, e.g. 'bf16_d128_large'. */
  readonly kernel?: string;
}

let kernelNames: readonly string[] | undefined;

export function applyOverrides(a: FlashAddon, nums: Float64Array, opts: FlashOverrides): void {
  if (opts.numSplits !== undefined) nums[NUM.numSplits] = opts.numSplits;
  if (opts.kernel !== undefined) {
    kernelNames ??= a.buildInfo().kernelNames; // fixed for the life of the loaded addon
    const index = kernelNames.indexOf(opts.kernel);
    if (index < 0) throw new AttnInputError('ATTN_FLASH_ARGUMENT', `flash-cuda has no kernel named '${opts.kernel}'.`);
    nums[NUM.kernel] = index;
  }
}

// The plan is a pure function of these slots and of whether ALiBi slopes, sequsedK and a block table are given
// (native/src/dispatch.cu: read_call_shape, make_plan and lean_ok; the mask's alignment and right bound set the keys
// a row can see; alignment, strides, sequsedK and the block table whether the TMA can read the call).
// Consecutive calls of one shape (training steps, benches, decode loops) reuse the last plan: comparing the
// slots costs ~0.05 us, the addon call ~1.5-3 us (string keys for a Map: ~1.7 us).
const PLAN_SLOTS = [
  NUM.isBf16,
  NUM.batch,
  NUM.headsQ,
  NUM.headsK,
  NUM.seqQ,
  NUM.seqK,
  NUM.headDim,
  NUM.totalQ,
  NUM.smCount,
  NUM.smemOptin,
  NUM.numSplits,
  NUM.kernel,
  NUM.softcap,
  NUM.dropout,
  NUM.windowLeft,
  NUM.windowRight,
  NUM.causal,
  NUM.lowerRight,
  NUM.scale,
  NUM.pageSize,
  NUM.kvCache,
  NUM.kvNewLen,
  NUM.kernelFamily,
  NUM.ccMajor,
  NUM.ccMinor,
  NUM.aligned16,
  ...QKV_STRIDE_SLOTS,
] as const;
const lastKey = new Float64Array(PLAN_SLOTS.length + 1).fill(Number.NaN); // NaN never compares equal
let lastPlan: FlashPlan | null = null;

export function cachedPlan(a: FlashAddon, ptrs: BigUint64Array, nums: Float64Array): FlashPlan {
  const given =
    (ptrs[PTR.alibi] !== 0n ? 1 : 0) | (ptrs[PTR.sequsedK] !== 0n ? 2 : 0) | (ptrs[PTR.blockTable] !== 0n ? 4 : 0);
  let same = lastPlan !== null && lastKey[PLAN_SLOTS.length] === given;
  for (let i = 0; same && i < PLAN_SLOTS.length; i++) same = lastKey[i] === nums[PLAN_SLOTS[i]!];
  if (same) return lastPlan!;
  let plan: FlashPlan;
  try {
    plan = a.plan(nums, ptrs); // throws on bad arguments: only successful plans are remembered
  } catch (e) {
    rethrow(e);
  }
  for (let i = 0; i < PLAN_SLOTS.length; i++) lastKey[i] = nums[PLAN_SLOTS[i]!]!;
  lastKey[PLAN_SLOTS.length] = given;
  lastPlan = plan;
  return plan;
}

// flashForward's argument arrays, reused: the addon reads them synchronously and keeps nothing.
const callArgs = argArrays();

export function flashForward(p: SdpaParams, opts: FlashOverrides = {}): ForwardOutputs {
  return runFlashForward(p, opts, true) as ForwardOutputs;
}

/** The attention output alone (sdpa()'s call): the logsumexp is written to scratch, freed once the kernels are queued. */
export function flashForwardOut(p: SdpaParams): Tensor {
  return runFlashForward(p, {}, false).out;
}

/** A forward call; keepLse false: the logsumexp is not returned (null), its memory freed stream-ordered. */
function runFlashForward(
  p: SdpaParams,
  opts: FlashOverrides,
  keepLse: boolean,
): { out: Tensor; logsumexp: Tensor | null } {
  const a = requireAddon();
  const device = p.device;
  const facts = factsOf(device.index);
  const { ptrs, nums } = packArgs(p, facts, callArgs);
  applyOverrides(a, nums, opts);
  const plan = cachedPlan(a, ptrs, nums);
  const varlen = p.varlen !== null;
  const totalQ = varlen ? p.query.shape[0]! : 0;
  const rows = varlen ? p.headsQ * totalQ : p.batch * p.headsQ * p.seqQ;
  if (!p.capturing && rows > 0) {
    const outputs = forwardAllocating(a, p, ptrs, nums, plan, rows, totalQ, keepLse);
    if (outputs) return outputs;
    nums[NUM.allocate] = 0; // the allocator had nothing to give: allocate below, where a failure says why
  }

  // The call's out when given (core checked it: this shape, contiguous), else a fresh one.
  const out = forwardOutput(p, outShape(p, totalQ), { dtype: p.dtype, device });
  const lse = varlen
    ? emptyOutput(OUTPUT_NAMES.logsumexp, [p.headsQ, totalQ], { dtype: 'float32', device })
    : emptyOutput(OUTPUT_NAMES.logsumexp, [p.batch, p.headsQ, p.seqQ], { dtype: 'float32', device });
  const scratch: Tensor[] = [];
  try {
    launchForward(
      a,
      p,
      ptrs,
      nums,
      plan,
      { q: p.query, out, lse, varlen, rows, lseStrides: lseStrides(p, totalQ) },
      scratch,
    );
  } catch (e) {
    if (out !== p.out) out.dispose(); // the user's out stays theirs
    lse.dispose();
    throw e;
  } finally {
    // Stream-ordered frees in @attn/cuda's caching allocator: the memory is reused only by work
    // queued after the kernels on the same stream.
    for (const t of scratch) t.dispose();
  }
  if (!keepLse) {
    lse.dispose(); // stream-ordered, as the partials
    return { out, logsumexp: null };
  }
  return { out, logsumexp: lse };
}

function outShape(p: SdpaParams, totalQ: number): number[] {
  return p.varlen !== null ? [totalQ, p.headsQ, p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV];
}

/** lse's batch and head strides: [B, Hq, Sq], or [Hq, totalQ] when varlen. */
function lseStrides(p: SdpaParams, totalQ: number): [number, number] {
  return p.varlen !== null ? [0, totalQ] : [p.headsQ * p.seqQ, p.seqQ];
}

let allocatorAttached = false;

/**
 * The one-call path: the addon allocates out (unless the call gave one), lse and the split partials from
 * @attn/cuda's caching allocator, launches, and frees the partials, in one N-API call; out and lse come back
 * as addresses, adopted here into @attn/cuda storages (keepLse false: lse is scratch, freed by the addon
 * like the partials). null when the allocator had nothing to give (nothing launched, nothing held).
 */
function forwardAllocating(
  a: FlashAddon,
  p: SdpaParams,
  ptrs: BigUint64Array,
  nums: Float64Array,
  plan: FlashPlan,
  rows: number,
  totalQ: number,
  keepLse: boolean,
): { out: Tensor; logsumexp: Tensor | null } | null {
  if (!allocatorAttached) {
    try {
      a.useAllocator(allocatorApi());
    } catch (e) {
      rethrow(e);
    }
    allocatorAttached = true;
  }
  const given = p.out && forwardOutput(p, outShape(p, totalQ), { dtype: p.dtype, device: p.device });
  const shape = outShape(p, totalQ);
  const outBytes = rows * p.headDimV * DTYPE_BYTES[p.dtype];
  // A fresh out is contiguous: [B, Hq, Sq, Dv] (varlen [totalQ, Hq, Dv], rows at Hq * Dv).
  if (given) {
    [nums[NUM.oBatchStride], nums[NUM.oHeadStride], nums[NUM.oRowStride]] = strides3(given, p.varlen !== null);
  } else if (p.varlen !== null) {
    [nums[NUM.oBatchStride], nums[NUM.oHeadStride], nums[NUM.oRowStride]] = [0, p.headDimV, p.headsQ * p.headDimV];
  } else {
    nums[NUM.oBatchStride] = p.headsQ * p.seqQ * p.headDimV;
    nums[NUM.oHeadStride] = p.seqQ * p.headDimV;
    nums[NUM.oRowStride] = p.headDimV;
  }
  [nums[NUM.lseBatchStride], nums[NUM.lseHeadStride]] = lseStrides(p, totalQ);
  // packArgs checked q, k, v and a given out; out's strides are in now. A fresh out starts on an allocator block
  // (>= 512-byte aligned; the addon checks 16).
  if (!outStridesAligned16(nums)) nums[NUM.aligned16] = 0;
  nums[NUM.numSplits] = plan.numSplits;
  ptrs[PTR.q] = p.query.dataPointer();
  ptrs[PTR.k] = p.key.dataPointer();
  ptrs[PTR.v] = p.value.dataPointer();
  ptrs[PTR.out] = given ? given.dataPointer() : 0n;
  let bits = (keepLse ? ALLOC.lse : ALLOC.lseScratch) | (given ? 0 : ALLOC.out);
  nums[NUM.outBytes] = given ? 0 : outBytes;
  nums[NUM.lseBytes] = rows * 4;
  if (plan.numSplits > 1 && !plan.clusterSplits) {
    // O partials first, then the lse partials (float32 each).
    const oElems = plan.numSplits * rows * plan.oaccumStride;
    bits |= ALLOC.partials;
    nums[NUM.accumBytes] = (oElems + plan.numSplits * rows) * 4;
    nums[NUM.lseAccumOffset] = oElems * 4;
  }
  nums[NUM.allocate] = bits;
  let launched: boolean;
  try {
    launched = a.forward(ptrs, nums);
  } catch (e) {
    rethrow(e);
  }
  if (!launched) return null;
  const index = p.device.index;
  const out = given ?? new Tensor({ storage: adoptBlock(ptrs[PTR.out]!, outBytes, index), dtype: p.dtype, shape });
  if (!keepLse) return { out, logsumexp: null };
  const lse = new Tensor({
    storage: adoptBlock(ptrs[PTR.lse]!, rows * 4, index),
    dtype: 'float32',
    shape: p.varlen !== null ? [p.headsQ, totalQ] : [p.batch, p.headsQ, p.seqQ],
  });
  return { out, logsumexp: lse };
}

/** Where one forward launch reads q and writes its outputs, and how many query rows (x heads) it has. */
export interface ForwardIo {
  readonly q: Tensor;
  /** [B, Hq, Sq, Dv] (a view), or [totalQ, Hq, Dv] when varlen. */
  readonly out: Tensor;
  readonly lse: Tensor;
  readonly varlen: boolean;
  readonly rows: number;
  /** lse's batch and head strides. */
  readonly lseStrides: readonly [number, number];
}

/**
 * The launch half of a forward call (flashForward and the kv-cache path): the output and lse strides,
 * the alignment, the split partials (one scratch allocation, O partials then lse partials, pushed to
 * `scratch` for the caller to free after the call), the pointers and the stream; then the kernels.
 * ptrs / nums already hold the call's packed arguments, and plan is cachedPlan's for them.
 */
export function launchForward(
  a: FlashAddon,
  p: SdpaParams,
  ptrs: BigUint64Array,
  nums: Float64Array,
  plan: FlashPlan,
  io: ForwardIo,
  scratch: Tensor[],
): void {
  [nums[NUM.oBatchStride], nums[NUM.oHeadStride], nums[NUM.oRowStride]] = strides3(io.out, io.varlen);
  [nums[NUM.lseBatchStride], nums[NUM.lseHeadStride]] = io.lseStrides;
  nums[NUM.aligned16] = aligned16(p, [io.q, p.key, p.value, io.out], nums) ? 1 : 0;
  nums[NUM.numSplits] = plan.numSplits;
  ptrs[PTR.q] = io.q.dataPointer();
  ptrs[PTR.k] = p.key.dataPointer();
  ptrs[PTR.v] = p.value.dataPointer();
  ptrs[PTR.out] = io.out.dataPointer();
  ptrs[PTR.lse] = io.lse.dataPointer();
  ptrs[PTR.oaccum] = 0n;
  ptrs[PTR.lseAccum] = 0n;
  if (plan.numSplits > 1 && !plan.clusterSplits) {
    // One scratch allocation for both partials (one allocator round trip per call instead of two):
    // O partials first, then the lse partials (float32 each, read and written element-wise).
    // Shaped [splits * rows, stride + 1] so that no dim passes 2^31 - 1; only the byte layout matters.
    const oElems = plan.numSplits * io.rows * plan.oaccumStride;
    const partials = empty([plan.numSplits * io.rows, plan.oaccumStride + 1], { dtype: 'float32', device: p.device });
    scratch.push(partials);
    const base = partials.dataPointer();
    ptrs[PTR.oaccum] = base;
    ptrs[PTR.lseAccum] = base + BigInt(oElems * 4);
  }
  ptrs[PTR.stream] = currentStream(p.device.index);
  try {
    a.forward(ptrs, nums);
  } catch (e) {
    rethrow(e);
  }
}

/** What the addon would run for these params (kernel configuration, splits): diagnostics and benches. */
export function planFor(
  p: SdpaParams,
  opts: FlashOverrides = {},
): { kernel: string; numSplits: number; packGqa: boolean; clusterSplits: boolean } {
  const a = requireAddon();
  const { ptrs, nums } = packArgs(p, factsOf(p.device.index));
  applyOverrides(a, nums, opts);
  try {
    const plan = a.plan(nums, ptrs);
    return { kernel: plan.kernel, numSplits: plan.numSplits, packGqa: plan.packGqa, clusterSplits: plan.clusterSplits };
  } catch (e) {
    rethrow(e);
  }
}
