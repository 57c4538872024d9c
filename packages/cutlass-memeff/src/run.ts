// One forward or backward call: outputs and workspace allocated through the registered 'cuda'
// runtime (@attn/cuda's caching allocator), kernels launched on @attn/cuda's current stream.
import {
  AttnError,
  DeviceError,
  type DeviceStorage,
  type DType,
  empty,
  emptyOutput,
  forwardOutput,
  type ForwardOutputs,
  full,
  type Gradients,
  OUTPUT_NAMES,
  requireDeviceRuntime,
  type SdpaParams,
  type Tensor,
  zeros,
} from '@attn/core';
import { currentStream } from '@attn/cuda';
import { backwardArgs, forwardArgs, scratchArrays, setWorkspace } from './launch-args.js';
import { addonState, type BackwardPlan, type KernelPath, type MemeffAddon } from './native.js';

// The argument arrays of every call, refilled per call (the addon reads them only while it runs).
const scratch = scratchArrays();

export function requireAddon(): MemeffAddon {
  const load = addonState();
  if (!load.ok) throw new DeviceError('ATTN_UNAVAILABLE', `memeff-cuda is unavailable: ${load.reason}`);
  return load.addon;
}

/** Native errors (a CUDA error names the kernel; bad arguments say which) as attn errors. */
function callNative<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof AttnError) throw e;
    const err = e as { message?: string; code?: string };
    const msg = `memeff-cuda ${what}: ${err.message ?? String(e)}`;
    throw err.code === 'ATTN_MEMEFF_ARGS'
      ? new AttnError('ATTN_BACKEND_ARGS', msg, { cause: e })
      : new DeviceError('ATTN_CUDA_ERROR', msg, { cause: e });
  }
}

export interface ForwardRun {
  readonly outputs: ForwardOutputs;
  /** The kernel instance that ran ('' when there was nothing to compute). */
  readonly kernel: string;
}

/** out and logsumexp: dense [B, Hq, Sq, Dv] and [B, Hq, Sq], varlen [totalQ, Hq, Dv] and [Hq, totalQ]. */
function outputShapes(p: SdpaParams): { out: number[]; lse: number[] } {
  if (p.varlen) {
    const totalQ = p.query.shape[0]!;
    return { out: [totalQ, p.headsQ, p.headDimV], lse: [p.headsQ, totalQ] };
  }
  return { out: [p.batch, p.headsQ, p.seqQ, p.headDimV], lse: [p.batch, p.headsQ, p.seqQ] };
}

/** No key at all (Sk = 0, or every varlen sequence empty): every row is fully masked, nothing to launch. */
/** Zeros a contiguous device tensor in place, on the runtime's current stream. */
function zeroFill(t: Tensor): Tensor {
  requireDeviceRuntime(t.device).fill(t.storage as DeviceStorage, t.offset * t.itemBytes, t.numel * t.itemBytes, 0);
  return t;
}

function noKeys(p: SdpaParams): boolean {
  return p.seqK === 0 || p.key.shape[0] === 0 || p.headsKV === 0;
}

export function runForward(p: SdpaParams, path: KernelPath = 'auto'): ForwardRun {
  const addon = requireAddon();
  const device = p.device;
  const shapes = outputShapes(p);
  if (noKeys(p)) {
    // Rows that see no key: out 0, logsumexp -inf (cpu-math's fully masked rows).
    const out = p.out ? zeroFill(p.out) : zeros(shapes.out, { dtype: p.dtype, device });
    const logsumexp = full(shapes.lse, -Infinity, { dtype: 'float32', device });
    return { outputs: { out, logsumexp }, kernel: '' };
  }
  // The call's out when given (core checked it: this shape, contiguous), else a fresh one.
  const out = forwardOutput(p, shapes.out, { dtype: p.dtype, device });
  const logsumexp = emptyOutput(OUTPUT_NAMES.logsumexp, shapes.lse, { dtype: 'float32', device });
  if (logsumexp.numel === 0) return { outputs: { out, logsumexp }, kernel: '' };
  try {
    const { ptrs, nums } = forwardArgs(p, out, logsumexp, currentStream(device.index), path, scratch);
    const kernel = callNative('forward', () => addon.forward(ptrs, nums));
    return { outputs: { out, logsumexp }, kernel };
  } catch (e) {
    if (out !== p.out) out.dispose(); // the user's out stays theirs
    logsumexp.dispose();
    throw e;
  }
}

export interface BackwardRun {
  readonly gradients: Gradients;
  readonly kernels: readonly string[];
  readonly plan: BackwardPlan | null;
}

export function runBackward(
  p: SdpaParams,
  saved: ForwardOutputs,
  gradOut: Tensor,
  path: KernelPath = 'auto',
): BackwardRun {
  const addon = requireAddon();
  const device = p.device;
  const additive = p.mask?.kind === 'additive' ? p.mask.tensor : null;
  const alloc = (shape: readonly number[], dtype: DType = p.dtype): Tensor => empty(shape, { dtype, device });
  if (p.query.numel === 0 || noKeys(p)) {
    // No query or no key: every gradient is 0 (or empty).
    const z = (shape: readonly number[], dtype: DType = p.dtype): Tensor => zeros(shape, { dtype, device });
    const g: Gradients = { dq: z(p.query.shape), dk: z(p.key.shape), dv: z(p.value.shape) };
    return { gradients: additive ? { ...g, dbias: z(additive.shape, additive.dtype) } : g, kernels: [], plan: null };
  }
  // The kernels read dO with any strides but a contiguous last dim.
  const dout = gradOut.strides[gradOut.rank - 1] === 1 ? gradOut : gradOut.contiguous();
  const t = {
    out: saved.out,
    lse: saved.logsumexp,
    gradOut: dout,
    dq: alloc(p.query.shape),
    dk: alloc(p.key.shape),
    dv: alloc(p.value.shape),
    dbias: additive ? alloc(additive.shape, additive.dtype) : null,
  };
  let ws: Tensor | null = null;
  try {
    const stream = currentStream(device.index);
    const a = backwardArgs(p, t, stream, null, path, scratch);
    const plan = callNative('backward plan', () => addon.backwardPlan(a.ptrs, a.nums, a.bptrs, a.bnums));
    ws = alloc([Math.ceil(plan.workspaceBytes / 4)], 'float32');
    setWorkspace(a, { ptr: ws.dataPointer(), bytes: ws.numel * 4 }); // the plan's arrays, now with the workspace
    const kernels = callNative('backward', () => addon.backward(a.ptrs, a.nums, a.bptrs, a.bnums));
    const g: Gradients = { dq: t.dq, dk: t.dk, dv: t.dv };
    return { gradients: t.dbias ? { ...g, dbias: t.dbias } : g, kernels, plan };
  } catch (e) {
    for (const out of [t.dq, t.dk, t.dv, t.dbias]) out?.dispose();
    throw e;
  } finally {
    ws?.dispose(); // stream-ordered: reused only by later work on this stream
    if (dout !== gradOut) dout.dispose();
  }
}
