// SdpaParams -> the addon's call descriptors, and the output tensors the kernels write into.
// Only CPU tensors get here (the rules say so); views are passed as they are, strides included.
import {
  AttnInputError,
  emptyOutput,
  forwardOutput,
  hostIndexCopies,
  kernelWindow,
  kvHostCopies,
  OUTPUT_NAMES,
} from '@attn/core';
import type { ForwardOutputs, SdpaParams, Tensor } from '@attn/core';

import { cachePages } from '../kv-cache/host.js';
import type { NativeBackwardDesc, NativeForwardDesc, NativeView } from './native.js';

type KernelDType = NativeForwardDesc['dtype'];

/** Dense [B, H, S, D] as is; varlen packed [total, H, D] as [1, H, total, D] (strides [0, head, token, dim]). */
function view(t: Tensor, what: string, packed: boolean): NativeView {
  const rank = packed ? 3 : 4;
  if (t.rank !== rank) {
    throw new AttnInputError('ATTN_RANK', `cpu-flash: ${what} must be rank ${rank}, got [${t.shape.join(', ')}].`);
  }
  const s = t.strides;
  const strides: [number, number, number, number] = packed ? [0, s[1]!, s[0]!, s[2]!] : [s[0]!, s[1]!, s[2]!, s[3]!];
  return { data: t.hostData(), offset: t.offset, strides };
}

/** A paged block pool [numBlocks, blockSize, H, D] as [numBlocks, H, blockSize, D] (strides [block, head, row, dim]). */
function poolView(t: Tensor, what: string): NativeView {
  if (t.rank !== 4) {
    throw new AttnInputError(
      'ATTN_RANK',
      `cpu-flash: paged ${what} must be a block pool [numBlocks, blockSize, H, D], got [${t.shape.join(', ')}].`,
    );
  }
  const s = t.strides;
  return { data: t.hostData(), offset: t.offset, strides: [s[0]!, s[2]!, s[1]!, s[3]!] };
}

function kernelDType(p: SdpaParams): KernelDType {
  if (p.dtype === 'float32' || p.dtype === 'float16' || p.dtype === 'bfloat16') return p.dtype;
  throw new AttnInputError('ATTN_DTYPE', `cpu-flash runs float32, float16 and bfloat16, not ${p.dtype}.`);
}

/** FLOPs of the forward as FlashAttention counts them (4 B H Sq Sk D per used key; causal halves it). */
export function forwardFlops(p: SdpaParams): number {
  const { seqlensQ: cuQ, seqlensK: cuK, sequsedK } = hostIndexCopies(p);
  const used = sequsedK ?? p.kvCache?.keyCount ?? null;
  let pairs = p.batch * p.seqQ * p.seqK;
  if (cuQ || used) {
    pairs = 0;
    for (let b = 0; b < p.batch; b++) {
      const sq = cuQ ? cuQ[b + 1]! - cuQ[b]! : p.seqQ;
      pairs += sq * (used ? used[b]! : cuK ? cuK[b + 1]! - cuK[b]! : p.seqK);
    }
  }
  return (4 * pairs * p.headsQ * Math.max(p.headDim, p.headDimV)) / (p.causal ? 2 : 1);
}

/** The descriptor of a forward call writing into `out` and `lse`. */
export function forwardDesc(p: SdpaParams, out: Tensor, lse: Tensor, isa: string, threads: number): NativeForwardDesc {
  const index = hostIndexCopies(p);
  const mask = p.mask;
  const packed = p.varlen !== null;
  const slopes = p.alibiSlopes;
  const drop = p.dropout;
  return {
    isa,
    threads,
    dtype: kernelDType(p),
    B: p.batch,
    Hq: p.headsQ,
    Hk: p.headsKV,
    Sq: p.seqQ,
    Sk: p.seqK,
    D: p.headDim,
    Dv: p.headDimV,
    q: view(p.query, 'query', packed),
    k: p.paged || p.kvCache ? poolView(p.key, 'key') : view(p.key, 'key', packed),
    v: p.paged || p.kvCache ? poolView(p.value, 'value') : view(p.value, 'value', packed),
    out: view(out, 'out', packed),
    lse: { data: lse.hostData() as Float32Array, offset: lse.offset },
    scale: p.scale,
    softcap: p.softcap,
    causal: p.causal,
    lowerRight: p.alignment === 'lowerRight',
    ...windowSides(kernelWindow(p)),
    mask: mask
      ? {
          kind: mask.kind,
          dtype: mask.tensor.dtype,
          data: mask.tensor.hostData(),
          offset: mask.tensor.offset,
          strides: [...mask.expandedStrides],
        }
      : null,
    alibi: slopes
      ? {
          data: slopes.hostData() as Float32Array,
          offset: slopes.offset,
          strideB: slopes.rank === 2 ? slopes.strides[0]! : 0,
          strideH: slopes.strides[slopes.rank - 1]!,
        }
      : null,
    dropout: drop
      ? {
          seedLo: Number(drop.seed & 0xffffffffn),
          seedHi: Number((drop.seed >> 32n) & 0xffffffffn),
          offset: drop.offset,
          threshold: drop.threshold,
          keepScale: drop.keepScale,
        }
      : null,
    varlen: index.seqlensQ ? { cuQ: index.seqlensQ, cuK: index.seqlensK! } : null,
    sequsedK: index.sequsedK ?? (p.kvCache ? kvHostCopies(p.kvCache).keyCount : null),
    paged: pagedDesc(p),
  };
}

/**
 * The block table the kernel reads keys through: a varlen call's, or a kv cache's (its pool pages;
 * each row's keys start at keyStart, and it reads keyCount of them, passed as sequsedK).
 */
function pagedDesc(p: SdpaParams): NativeForwardDesc['paged'] {
  const kv = p.kvCache;
  if (kv) return { ...cachePages(p, kv), keyStart: kvHostCopies(kv).keyStart };
  if (!p.paged) return null;
  const { maxBlocksPerSeq, blockSize, numBlocks } = p.paged;
  const table = hostIndexCopies(p).blockTable!;
  return { table, tableStride: maxBlocksPerSeq, blockSize, numBlocks, keyStart: null };
}

/** Tokens of the query and key side: varlen totals, or dense B and S (for shapes). */
function totals(p: SdpaParams): { q: number; k: number } {
  const { seqlensQ, seqlensK } = hostIndexCopies(p);
  return seqlensQ ? { q: seqlensQ[p.batch]!, k: seqlensK![p.batch]! } : { q: p.seqQ, k: p.seqK };
}

/** The shapes of out and logsumexp: dense [B, Hq, Sq, Dv] and [B, Hq, Sq]; varlen [totalQ, Hq, Dv] and [Hq, totalQ]. */
export function outputShapes(p: SdpaParams): { out: number[]; lse: number[] } {
  if (!p.varlen) return { out: [p.batch, p.headsQ, p.seqQ, p.headDimV], lse: [p.batch, p.headsQ, p.seqQ] };
  const t = totals(p);
  return { out: [t.q, p.headsQ, p.headDimV], lse: [p.headsQ, t.q] };
}

/**
 * The outputs: out in the query dtype (the call's out when given, else fresh), logsumexp float32
 * (shapes: outputShapes). A kv-cache call's out is stored [B, Sq, Hq, Dv] (sdpaKvCache hands it back
 * in that layout) and viewed as its shape. Fresh ones are not zero-filled: the kernel writes every
 * element (rows that see no key get 0 and -inf; forward.test.ts checks it on NaN-filled outputs).
 */
export function forwardOutputs(p: SdpaParams): ForwardOutputs {
  const shapes = outputShapes(p);
  const stored = [p.batch, p.seqQ, p.headsQ, p.headDimV]; // a kv-cache call's out
  const out = p.kvCache
    ? emptyOutput(OUTPUT_NAMES.out, stored, { dtype: p.dtype }, 'whole').transpose(1, 2)
    : forwardOutput(p, shapes.out, { dtype: p.dtype }, 'whole');
  return {
    out,
    logsumexp: emptyOutput(OUTPUT_NAMES.logsumexp, shapes.lse, { dtype: 'float32' }, 'whole'),
  };
}

/** The mask's own shape as [B, Hq, Sq, Sk] dims: 1 where the gradient sums over a dim. */
export function maskGradDims(p: SdpaParams): number[] {
  const shape = p.mask!.tensor.shape;
  const own = [...Array<number>(4 - shape.length).fill(1), ...shape];
  return own;
}

export interface BackwardBuffers {
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  /** fp32 dbias in the mask's own shape, before rounding to the mask's dtype. */
  readonly dbias: Float32Array | null;
  readonly dbiasDims: number[] | null;
}

/**
 * The backward's outputs. dq, dk and dv are not zero-filled: the kernel writes every element (unused keys and
 * empty sequences get 0; backward.test.ts checks it on NaN-filled buffers). dbias sums into zeros.
 */
export function backwardBuffers(p: SdpaParams): BackwardBuffers {
  const additive = p.mask?.kind === 'additive';
  const dims = additive ? maskGradDims(p) : null;
  const t = totals(p);
  const shape = (tokens: number, heads: number, d: number, seq: number) =>
    p.varlen ? [tokens, heads, d] : [p.batch, heads, seq, d];
  return {
    dq: emptyOutput(OUTPUT_NAMES.dq, shape(t.q, p.headsQ, p.headDim, p.seqQ), { dtype: p.dtype }, 'whole'),
    dk: emptyOutput(OUTPUT_NAMES.dk, shape(t.k, p.headsKV, p.headDim, p.seqK), { dtype: p.dtype }, 'whole'),
    dv: emptyOutput(OUTPUT_NAMES.dv, shape(t.k, p.headsKV, p.headDimV, p.seqK), { dtype: p.dtype }, 'whole'),
    dbias: dims ? new Float32Array(dims.reduce((a, b) => a * b, 1)) : null,
    dbiasDims: dims,
  };
}

/** The descriptor of a backward call; `lse` must be the forward's contiguous float32 logsumexp. */
export function backwardDesc(
  p: SdpaParams,
  saved: ForwardOutputs,
  gradOut: Tensor,
  bufs: BackwardBuffers,
  isa: string,
  threads: number,
): NativeBackwardDesc {
  const lse = saved.logsumexp;
  const fwd = forwardDesc(p, saved.out, lse, isa, threads);
  const packed = p.varlen !== null;
  return {
    ...fwd,
    dout: view(gradOut, 'gradOut', packed),
    dq: view(bufs.dq, 'dq', packed),
    dk: view(bufs.dk, 'dk', packed),
    dv: view(bufs.dv, 'dv', packed),
    dbias: bufs.dbias ? { data: bufs.dbias, offset: 0, dims: bufs.dbiasDims! } : null,
  };
}

/** The addon's two window fields (-1 = unbounded). */
function windowSides(w: { left: number; right: number }): { windowLeft: number; windowRight: number } {
  return { windowLeft: w.left, windowRight: w.right };
}
