// One forward or backward call: outputs allocated through the registered 'cuda' runtime (this
// package's caching allocator, core's emptyOutput naming the tensor on failure), kernels queued on
// the device's current stream by the addon. Nothing here waits for the device.
import {
  empty,
  emptyOutput,
  forwardOutput,
  OUTPUT_NAMES,
  type ForwardOutputs,
  type Gradients,
  type SdpaParams,
  type Tensor,
} from '@attn/core';
import { cuda } from '../cuda-runtime.js';
import { callNative } from '../errors.js';
import { kvAppendArgs } from '../kv-append.js';
import { requireMath } from './binding.js';
import { backwardArgs, forwardArgs, kvCacheForwardArgs } from './launch-args.js';

export interface ForwardRun {
  readonly outputs: ForwardOutputs;
  /** The kernel instance that ran ('' when there were no query rows). */
  readonly kernel: string;
}

export interface BackwardRun {
  readonly gradients: Gradients;
  readonly kernels: readonly string[];
}

function disposeAll(ts: readonly (Tensor | null)[]): void {
  for (const t of ts) t?.dispose();
}

export function runForward(p: SdpaParams): ForwardRun {
  if (p.kvCache) return runKvCacheForward(p);
  const addon = requireMath();
  const device = p.device;
  const totalQ = p.varlen ? p.query.shape[0]! : 0;
  const outShape = p.varlen ? [totalQ, p.headsQ, p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV];
  const lseShape = p.varlen ? [p.headsQ, totalQ] : [p.batch, p.headsQ, p.seqQ];
  const out = forwardOutput(p, outShape, { dtype: p.dtype, device });
  let lse: Tensor | null = null;
  try {
    lse = emptyOutput(OUTPUT_NAMES.logsumexp, lseShape, { dtype: 'float32', device });
    const args = forwardArgs(p, out, lse);
    const kernel = callNative(() => addon.mathForward(args));
    return { outputs: { out, logsumexp: lse }, kernel };
  } catch (e) {
    disposeAll([out === p.out ? null : out, lse]); // the user's out stays theirs
    throw e;
  }
}

/**
 * A sdpaKvCache call: the shared append and rotary kernel (kNew / vNew into the cache, q rotated into
 * a [B, Sq, Hq, D] scratch), then the forward over the cache as a paged varlen call. out is returned as
 * the [B, Hq, Sq, Dv] view of its [B, Sq, Hq, Dv] storage, logsumexp as the [B, Hq, Sq] view of [Hq, B, Sq].
 */
function runKvCacheForward(p: SdpaParams): ForwardRun {
  const addon = requireMath();
  const device = p.device;
  const { batch: B, seqQ: Sq, headsQ: Hq } = p;
  const out = emptyOutput(OUTPUT_NAMES.out, [B * Sq, Hq, p.headDimV], { dtype: p.dtype, device });
  let lse: Tensor | null = null;
  let qRot: Tensor | null = null;
  try {
    lse = emptyOutput(OUTPUT_NAMES.logsumexp, [Hq, B * Sq], { dtype: 'float32', device });
    qRot = empty([B, Sq, Hq, p.headDim], { dtype: p.dtype, device });
    const append = kvAppendArgs(p, { qOut: qRot, rowTable: null, stream: cuda.currentStream(device.index) });
    callNative(() => addon.kvAppend(append.ptrs, append.nums, device.index));
    const args = kvCacheForwardArgs(p, qRot.reshape([B * Sq, Hq, p.headDim]), out, lse);
    const kernel = callNative(() => addon.mathForward(args));
    const outputs = {
      out: out.reshape([B, Sq, Hq, p.headDimV]).transpose(1, 2),
      logsumexp: lse.reshape([Hq, B, Sq]).permute([1, 0, 2]),
    };
    return { outputs, kernel };
  } catch (e) {
    disposeAll([out, lse]);
    throw e;
  } finally {
    // Stream-ordered free: reused only by work queued after the forward on this stream.
    qRot?.dispose();
  }
}

export function runBackward(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): BackwardRun {
  const addon = requireMath();
  const device = p.device;
  const additive = p.mask?.kind === 'additive' ? p.mask.tensor : null;
  const made: Tensor[] = [];
  const alloc = (name: (typeof OUTPUT_NAMES)[keyof typeof OUTPUT_NAMES], like: Tensor, dtype = p.dtype): Tensor => {
    const t = emptyOutput(name, like.shape, { dtype, device });
    made.push(t);
    return t;
  };
  try {
    const t = {
      out: saved.out,
      lse: saved.logsumexp,
      gradOut,
      dq: alloc(OUTPUT_NAMES.dq, p.query),
      dk: alloc(OUTPUT_NAMES.dk, p.key),
      dv: alloc(OUTPUT_NAMES.dv, p.value),
      dbias: additive ? alloc(OUTPUT_NAMES.dbias, additive, additive.dtype as SdpaParams['dtype']) : null,
    };
    const args = backwardArgs(p, t);
    const kernels = callNative(() => addon.mathBackward(args));
    const g: Gradients = { dq: t.dq, dk: t.dk, dv: t.dv };
    return { gradients: t.dbias ? { ...g, dbias: t.dbias } : g, kernels };
  } catch (e) {
    disposeAll(made);
    throw e;
  }
}
