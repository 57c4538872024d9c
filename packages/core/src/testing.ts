// @attn/core/testing: helpers for the tests of core and of backend packages. Not for production use.
import type { Backend, BackwardFrom, ForwardOutputs, Gradients, KernelChoice, Rule } from './backend.js';
import type { DeviceType } from './device.js';
import { full } from './factory.js';
import type { SdpaParams } from './params.js';
import { createRegistryState, registryState, swapRegistryState } from './registry-state.js';
import type { Tensor } from './tensor.js';

export interface FakeBackendOptions {
  deviceType?: DeviceType;
  /** Default 0. */
  priority?: number;
  rules?: readonly Rule[];
  /** Its kernel families (the `kernel` option). */
  kernels?: readonly KernelChoice[];
  /** Takes float8_e4m3 inputs (Backend.float8Inputs). */
  float8Inputs?: boolean;
  /** true (default), or the reason it is unavailable. */
  available?: true | string;
  forward?: (params: SdpaParams) => ForwardOutputs;
  forwardAsync?: (params: SdpaParams) => Promise<ForwardOutputs>;
  backward?: (params: SdpaParams, saved: ForwardOutputs, gradOut: Tensor) => Gradients;
  backwardFrom?: BackwardFrom;
}

export interface FakeBackend extends Backend {
  /** The params of every forward call, in order. */
  readonly calls: SdpaParams[];
}

/**
 * Outputs of the right shape, dtype and device filled with NaN: a fake computes nothing, and NaN
 * makes sure no test mistakes its output for a result.
 */
export function nanOutputs(p: SdpaParams): ForwardOutputs {
  const device = p.device;
  if (p.varlen) {
    const totalQ = p.query.shape[0]!;
    return {
      out: full([totalQ, p.headsQ, p.headDimV], NaN, { dtype: p.dtype, device }),
      logsumexp: full([p.headsQ, totalQ], NaN, { dtype: 'float32', device }),
    };
  }
  return {
    out: full([p.batch, p.headsQ, p.seqQ, p.headDimV], NaN, { dtype: p.dtype, device }),
    logsumexp: full([p.batch, p.headsQ, p.seqQ], NaN, { dtype: 'float32', device }),
  };
}

/** A backend for selection tests: given rules and priority, records its calls. */
export function makeFakeBackend(name: string, opts: FakeBackendOptions = {}): FakeBackend {
  const calls: SdpaParams[] = [];
  const forward = opts.forward ?? nanOutputs;
  const backend: FakeBackend = {
    name,
    deviceType: opts.deviceType ?? 'cpu',
    defaultPriority: opts.priority ?? 0,
    description: `fake backend '${name}' for tests`,
    rules: opts.rules ?? [],
    ...(opts.kernels ? { kernels: opts.kernels } : {}),
    ...(opts.float8Inputs ? { float8Inputs: true } : {}),
    calls,
    availability: () =>
      opts.available === undefined || opts.available === true ? { ok: true } : { ok: false, reason: opts.available },
    forward: (p) => {
      calls.push(p);
      return forward(p);
    },
    ...(opts.forwardAsync
      ? {
          forwardAsync: (p: SdpaParams) => {
            calls.push(p);
            return opts.forwardAsync!(p);
          },
        }
      : {}),
    ...(opts.backward ? { backward: opts.backward } : {}),
    ...(opts.backwardFrom ? { backwardFrom: opts.backwardFrom } : {}),
  };
  return backend;
}

export interface IsolationOptions {
  /** Keep the registered device runtimes (default true); backends always start empty. */
  keepDeviceRuntimes?: boolean;
}

/**
 * Swaps in a fresh, empty backend registry (and a fresh sdpaKernel scope) and returns the function
 * that puts the previous one back. For beforeEach/afterEach; prefer withIsolatedRegistry elsewhere.
 */
export function isolateRegistry(opts: IsolationOptions = {}): () => void {
  const fresh = createRegistryState();
  if (opts.keepDeviceRuntimes ?? true) {
    for (const [type, runtime] of registryState().runtimes) fresh.runtimes.set(type, runtime);
  }
  const prev = swapRegistryState(fresh);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    swapRegistryState(prev);
  };
}

/** Runs fn (sync or async) against a fresh registry; restores the real one afterwards, also on throw. */
export function withIsolatedRegistry<T>(fn: () => T, opts: IsolationOptions = {}): T {
  const restore = isolateRegistry(opts);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    restore();
    throw e;
  }
  if (result instanceof Promise) return result.finally(restore) as T;
  restore();
  return result;
}

/**
 * max |a - b| / max(1, max |b|) over two tensors of the same size (b the reference, read on the host);
 * Infinity when their NaN patterns differ (equal infinities match). The GPU suites' one error measure.
 */
export function scaledMaxError(a: Tensor, b: Tensor): number {
  const x = a.toFloat64Array();
  const y = b.toFloat64Array();
  let m = 0;
  let scale = 1;
  for (let i = 0; i < x.length; i++) {
    if (Number.isNaN(x[i]!) !== Number.isNaN(y[i]!)) return Infinity;
    if (x[i] !== y[i]) m = Math.max(m, Math.abs(x[i]! - y[i]!));
    if (Number.isFinite(y[i]!)) scale = Math.max(scale, Math.abs(y[i]!));
  }
  return m / scale;
}

/** max_i |a_i - b_i|; Infinity when any element is NaN (NaN never passes a tolerance). */
export function maxAbsError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) {
    throw new RangeError(`maxAbsError: lengths differ (${actual.length} vs ${expected.length}).`);
  }
  let max = 0;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i]! - expected[i]!);
    if (Number.isNaN(d)) {
      // Equal infinities are equal (their difference is NaN); anything else with NaN fails.
      if (actual[i] === expected[i]) continue;
      return Infinity;
    }
    if (d > max) max = d;
  }
  return max;
}

/** ||a - b||_2 / ||b||_2 (absolute norm when b is all zero); Infinity on NaN. */
export function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) {
    throw new RangeError(`relativeError: lengths differ (${actual.length} vs ${expected.length}).`);
  }
  let num = 0;
  let den = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (a === e) {
      den += Number.isFinite(e) ? e * e : 0;
      continue;
    }
    const d = a - e;
    if (!Number.isFinite(d)) return Infinity;
    num += d * d;
    den += e * e;
  }
  return den === 0 ? Math.sqrt(num) : Math.sqrt(num / den);
}

export { type FakeDeviceOptions, type FakeDeviceRuntime, makeFakeDeviceRuntime } from './fake-device.js';
