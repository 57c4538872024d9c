// SdpaParams (validated by core and by this backend's rules) packed into the addon's argument arrays (abi.ts,
// native/src/abi.h). Pure: no native calls, so it is tested on the CPU with a fake device runtime.
import { contiguousStrides, kernelWindow, type SdpaParams, type Tensor } from '@attn/core';
import { putNums, rowStrides, TENSOR_DTYPE_CODE, type AbiArrays } from '@attn/cuda';
import { BACKWARD_ABI, FORWARD_ABI, MASK_KIND, PATH_CODE } from './abi.js';
import type { KernelPath } from './native.js';

/** ElemType codes of native/src/common/params.h: attn/tensor_ref.h's DType numbers, from @attn/cuda. */
export const DTYPE_CODE = TENSOR_DTYPE_CODE;

const { ptr: PTR, num: NUM } = FORWARD_ABI;
const { ptr: BWD_PTR, num: BWD_NUM } = BACKWARD_ABI;

/** dbias's own shape, contiguous, seen along [B, Hq, Sq, Sk]: sizes (1 where it sums) and strides (0 there). */
export function dbiasLayout(maskShape: readonly number[]): {
  sizes: [number, number, number, number];
  strides: [number, number, number, number];
} {
  const own = contiguousStrides(maskShape);
  const sizes: [number, number, number, number] = [1, 1, 1, 1];
  const strides: [number, number, number, number] = [0, 0, 0, 0];
  const lead = 4 - maskShape.length;
  for (let d = 0; d < 4; d++) {
    const k = d - lead;
    if (k < 0) continue;
    sizes[d] = maskShape[k]!;
    strides[d] = maskShape[k] === 1 ? 0 : own[k]!;
  }
  return { sizes, strides };
}

/** `a` with every slot 0 again. */
function zeroed(a: AbiArrays): AbiArrays {
  a.ptrs.fill(0n);
  a.nums.fill(0);
  return a;
}

/**
 * The arrays a caller keeps and refills from call to call (`into`): fresh typed arrays cost ~3 us per call, more
 * than packing them (0.5-1 us; @attn/cuda's src/abi.ts), and the addon reads them only during the call. One pair
 * for the forward, two for the backward.
 */
export function scratchArrays(): BackwardArrays {
  const f = FORWARD_ABI.arrays();
  const b = BACKWARD_ABI.arrays();
  return { ...f, bptrs: b.ptrs, bnums: b.nums };
}

/**
 * The forward's arrays (fresh ones, or `into` zeroed and refilled): q, k, v, out as [batch, head, row] views (packed varlen: batch stride 0), lse, the
 * stream; causal, the alignment and the window ([left, right], -1 unbounded: core's kernelWindow); softcap,
 * ALiBi, varlen, sequsedK, the mask and dropout where the call has them (their slots 0 otherwise).
 */
export function forwardArgs(
  p: SdpaParams,
  out: Tensor,
  lse: Tensor,
  stream: bigint,
  path: KernelPath,
  into?: AbiArrays,
): AbiArrays {
  const { ptrs, nums } = into ? zeroed(into) : FORWARD_ABI.arrays();
  putNums(nums, NUM.dtype, [DTYPE_CODE[p.dtype], p.device.index, PATH_CODE[path]]);
  // batch, headsQ, headsKv, seqQ, seqK, headDim, headDimV: one group of the layout
  putNums(nums, NUM.batch, [p.batch, p.headsQ, p.headsKV, p.seqQ, p.seqK, p.headDim, p.headDimV]);
  // q, k, v, out, lse: one group of the layout
  ptrs.set(
    [p.query.dataPointer(), p.key.dataPointer(), p.value.dataPointer(), out.dataPointer(), lse.dataPointer()],
    PTR.q,
  );
  ptrs[PTR.stream] = stream;
  putNums(nums, NUM.qBatchStride, rowStrides(p.query));
  putNums(nums, NUM.kBatchStride, rowStrides(p.key));
  putNums(nums, NUM.vBatchStride, rowStrides(p.value));
  putNums(nums, NUM.oBatchStride, rowStrides(out));
  nums[NUM.scale] = p.scale;
  nums[NUM.causal] = p.causal ? 1 : 0;
  nums[NUM.lowerRight] = p.alignment === 'lowerRight' ? 1 : 0;
  const window = kernelWindow(p); // a side that reaches every key is unbounded (32-bit-safe)
  nums[NUM.windowLeft] = window.left;
  nums[NUM.windowRight] = window.right;
  nums[NUM.softcap] = p.softcap;
  const slopes = p.alibiSlopes; // float32 [Hq] or [B, Hq]
  if (slopes) {
    ptrs[PTR.alibi] = slopes.dataPointer();
    putNums(
      nums,
      NUM.alibiBatchStride,
      slopes.rank === 2 ? [slopes.strides[0]!, slopes.strides[1]!] : [0, slopes.strides[0]!],
    );
  }
  if (p.varlen) {
    ptrs[PTR.cuSeqlensQ] = p.varlen.cuSeqlensQ.dataPointer();
    ptrs[PTR.cuSeqlensK] = p.varlen.cuSeqlensK.dataPointer();
    nums[NUM.totalQ] = p.query.shape[0]!;
    nums[NUM.totalK] = p.key.shape[0]!;
  }
  if (p.sequsedK) ptrs[PTR.sequsedK] = p.sequsedK.tensor.dataPointer();
  if (p.mask) {
    const t = p.mask.tensor; // strides expanded to [B, Hq, Sq, Sk], 0 on broadcast dims
    ptrs[PTR.mask] = t.dataPointer();
    nums[NUM.maskKind] = p.mask.kind === 'additive' ? MASK_KIND.additive : MASK_KIND.bool;
    nums[NUM.maskDtype] = DTYPE_CODE[t.dtype];
    putNums(nums, NUM.maskBatchStride, p.mask.expandedStrides);
  }
  if (p.dropout) {
    nums[NUM.dropout] = 1;
    nums[NUM.dropoutThreshold] = p.dropout.threshold;
    nums[NUM.dropoutOffset] = p.dropout.offset;
    nums[NUM.dropoutKeepScale] = p.dropout.keepScale;
    ptrs[PTR.seed] = BigInt.asUintN(64, p.dropout.seed);
  }
  return { ptrs, nums };
}

export interface BackwardTensors {
  readonly out: Tensor;
  readonly lse: Tensor;
  readonly gradOut: Tensor;
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  readonly dbias: Tensor | null;
}

/** The backward's four arrays: the forward's (out and lse the saved results) and its own. */
export interface BackwardArrays extends AbiArrays {
  readonly bptrs: BigUint64Array;
  readonly bnums: Float64Array;
}

/** The backward's arrays (fresh, or `into` refilled); `workspace` null for backwardPlan (which sizes it). */
export function backwardArgs(
  p: SdpaParams,
  t: BackwardTensors,
  stream: bigint,
  workspace: { readonly ptr: bigint; readonly bytes: number } | null,
  path: KernelPath = 'auto',
  into?: BackwardArrays,
): BackwardArrays {
  const { ptrs, nums } = forwardArgs(p, t.out, t.lse, stream, path, into);
  const { ptrs: bptrs, nums: bnums } = into ? zeroed({ ptrs: into.bptrs, nums: into.bnums }) : BACKWARD_ABI.arrays();
  bptrs[BWD_PTR.dout] = t.gradOut.dataPointer();
  bptrs[BWD_PTR.dq] = t.dq.dataPointer();
  bptrs[BWD_PTR.dk] = t.dk.dataPointer();
  bptrs[BWD_PTR.dv] = t.dv.dataPointer();
  putNums(bnums, BWD_NUM.doBatchStride, rowStrides(t.gradOut));
  putNums(bnums, BWD_NUM.dqBatchStride, rowStrides(t.dq));
  putNums(bnums, BWD_NUM.dkBatchStride, rowStrides(t.dk));
  putNums(bnums, BWD_NUM.dvBatchStride, rowStrides(t.dv));
  if (t.dbias) {
    const layout = dbiasLayout(t.dbias.shape);
    bptrs[BWD_PTR.dbias] = t.dbias.dataPointer();
    putNums(bnums, BWD_NUM.dbiasBatchStride, layout.strides);
    putNums(bnums, BWD_NUM.dbiasBatches, layout.sizes);
  } else {
    putNums(bnums, BWD_NUM.dbiasBatches, [1, 1, 1, 1]);
  }
  bnums[BWD_NUM.deterministic] = p.deterministic ? 1 : 0;
  const a = { ptrs, nums, bptrs, bnums };
  if (workspace) setWorkspace(a, workspace);
  return a;
}

/** Fills the workspace slots of packed backward arrays: the plan sized it, the backward runs with it. */
export function setWorkspace(a: BackwardArrays, workspace: { readonly ptr: bigint; readonly bytes: number }): void {
  a.bptrs[BWD_PTR.workspace] = workspace.ptr;
  a.bnums[BWD_NUM.workspaceBytes] = workspace.bytes;
}
