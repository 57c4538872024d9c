// How much host memory the kernel allocates besides the outputs (what an out-of-memory error
// reports). Mirrors native/src/kernels/forward_f32.h and backward.h.
import type { SdpaParams } from '@attn/core';

const CONVERT_BUDGET = 256 * 2 ** 20;
const TILE = 64;

const up = (n: number, m: number) => Math.ceil(n / m) * m;

export function forwardWorkspaceBytes(p: SdpaParams, threads: number): number {
  const kv = p.batch * p.headsKV * p.seqK * (p.headDim + p.headDimV) * 4;
  const convert =
    p.dtype === 'float32' ? 0 : Math.min(kv, Math.max(CONVERT_BUDGET, p.seqK * (p.headDim + p.headDimV) * 4));
  // Q^T, S^T, O^T and row state, plus a key tile of K and V rows gathered from small paged blocks.
  const tile = (2 * p.headDim + TILE + 2 * p.headDimV + 8) * TILE * 4;
  return convert + threads * tile;
}

export function backwardWorkspaceBytes(p: SdpaParams): number {
  const dp = up(p.headDim, 16);
  const dvp = up(p.headDimV, 16);
  const rowsQ = p.batch * p.headsQ * p.seqQ;
  const headsK = p.batch * p.headsKV;
  const keys = headsK * up(p.seqK, TILE);
  const full = p.mask?.kind === 'additive' ? rowsQ * p.seqK : 0;
  return 4 * (rowsQ * (dp + dvp + 1) + headsK * p.seqK * dp + keys * (p.headDim + p.headDimV) + full);
}
