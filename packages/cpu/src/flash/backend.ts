// 'cpu-flash': the native tiled kernel (native/), behind core's Backend interface. Validation is
// core's (normalizeParams) plus this backend's rules, checked again here before any native call;
// the addon re-checks what could touch foreign memory and throws rather than crash.
import { AttnError, AttnInputError, rule, tensor } from '@attn/core';
import type { Backend, ForwardOutputs, Gradients, SdpaParams, Tensor } from '@attn/core';
import { callNative, fromNative } from './errors.js';
import { appendToCache, rotatedQuery } from '../kv-cache/host.js';
import { backwardBuffers, backwardDesc, forwardDesc, forwardFlops, forwardOutputs, outputShapes } from './marshal.js';
import { addon } from './native.js';
import type { CpuFlashAddon } from './native.js';
import { CPU_FLASH_TOLERANCES, cpuFlashRules } from './rules.js';
import { checkIsa, type CpuFlashIsa, isaKernels } from './isa.js';
import { checkThreads, defaultThreads, threadsFor } from './threads.js';
import { backwardWorkspaceBytes, forwardWorkspaceBytes } from './workspace.js';

export { CPU_FLASH_ISAS, type CpuFlashIsa } from './isa.js';

export interface CpuFlashOptions {
  /** Thread budget per call; default ATTN_NUM_THREADS, else os.availableParallelism(). */
  readonly threads?: number;
  /** SIMD level when a call names no kernel; default 'auto' (the fastest this CPU runs: amx, avx512bf16 on AMD, avx512, avx2, portable); see isa.ts. */
  readonly isa?: CpuFlashIsa;
  /** Registered name; default 'cpu-flash'. */
  readonly name?: string;
  /** Default 50: ahead of cpu-math (0). */
  readonly priority?: number;
}

/** Priority once the conformance suite passes (packages/cpu/src/flash/conformance.test.ts). */
export const CPU_FLASH_PRIORITY = 50;

function loaded(): CpuFlashAddon {
  const load = addon();
  // Selection never picks an unavailable backend; this is for direct calls.
  if (!load.ok) throw new AttnError('ATTN_BACKEND_UNAVAILABLE', `cpu-flash is unavailable: ${load.reason}`);
  return load.addon;
}

/** Throws AttnInputError naming every rule that declines the call (callers may skip core's selection). */
function checkRules(p: SdpaParams): void {
  const failing = cpuFlashRules
    .map((r) => ({ rule: r.name, message: r.check(p, { device: null }) }))
    .filter((r) => r.message !== null);
  if (failing.length > 0) {
    throw new AttnInputError(
      'ATTN_UNSUPPORTED',
      `cpu-flash does not support this call: ${failing.map((r) => `${r.rule}: ${r.message}`).join('; ')}`,
    );
  }
}

/**
 * sdpaBackwardFrom on cpu-flash: the fp32 backward takes delta = dO . out from the given out; the
 * fp16/bf16 one sums delta from this call's own softmax (rowsum(P dP), which stands for dO . O only
 * when out is this call's), so a caller's out from a wider softmax would give wrong gradients.
 */
const savedDeltaDtype = rule('savedOutDeltaFloat32', (p) =>
  p.dtype === 'float32'
    ? null
    : `Its ${p.dtype} backward derives delta from its own softmax, not from a given out; use float32 or cpu-math.`,
);

const isEmpty = (p: SdpaParams) => p.batch === 0 || p.headsQ === 0;

function checkSaved(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): ForwardOutputs {
  const shapes = outputShapes(p);
  const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  if (
    !same(saved.out.shape, shapes.out) ||
    saved.out.dtype !== p.dtype ||
    !same(gradOut.shape, shapes.out) ||
    gradOut.dtype !== p.dtype
  ) {
    throw new AttnInputError(
      'ATTN_GRAD_OUT',
      `cpu-flash backward: out and gradOut must be ${p.dtype} [${shapes.out.join(', ')}]; got out ${saved.out.dtype} [${saved.out.shape.join(', ')}], gradOut ${gradOut.dtype} [${gradOut.shape.join(', ')}].`,
    );
  }
  if (!same(saved.logsumexp.shape, shapes.lse) || saved.logsumexp.dtype !== 'float32') {
    throw new AttnInputError(
      'ATTN_GRAD_OUT',
      `cpu-flash backward: logsumexp must be float32 [${shapes.lse.join(', ')}], the forward's.`,
    );
  }
  for (const t of [saved.out, saved.logsumexp, gradOut]) {
    if (t.device.type !== 'cpu')
      throw new AttnInputError('ATTN_DEVICE_MISMATCH', 'cpu-flash backward: tensors must be on the CPU.');
  }
  // The kernel reads logsumexp as a contiguous array.
  return { out: saved.out, logsumexp: saved.logsumexp.contiguous() };
}

/** dbias in the mask's own shape and dtype, from the kernel's float32 sums. */
function dbiasTensor(p: SdpaParams, data: Float32Array): Tensor {
  const m = p.mask!.tensor;
  return m.dtype === 'float32'
    ? tensor(data, m.shape, { dtype: 'float32' })
    : tensor(Array.from(data), m.shape, { dtype: m.dtype });
}

/**
 * A kv-cache call's host work before the kernel: kNew / vNew appended to the cache (kv-cache/host.ts,
 * the same code as cpu-math, so both leave the same cache), and q rotated and rounded to its dtype
 * (the kernel takes q in the call's dtype). The kernel then reads the cache through its pool pages.
 */
function withKvCache(params: SdpaParams): SdpaParams {
  const kv = params.kvCache;
  if (!kv) return params;
  appendToCache(params, kv);
  return kv.rotary ? { ...params, query: rotatedQuery(params, kv, params.dtype) } : params;
}

export function createCpuFlashBackend(options: CpuFlashOptions = {}): Backend {
  if (options.isa !== undefined) checkIsa(options.isa);
  // The call's kernel option (a level this CPU runs: selection checked it), else the instance's.
  const level = (p?: SdpaParams): CpuFlashIsa => (p?.kernel as CpuFlashIsa | null | undefined) ?? options.isa ?? 'auto';
  const runnable = (): readonly string[] | null => {
    const load = addon();
    return load.ok ? load.addon.buildInfo('auto').runnableIsas : null;
  };
  const limit = () => (options.threads !== undefined ? checkThreads(options.threads) : defaultThreads());

  function prepare(call: SdpaParams) {
    checkRules(call);
    const p = withKvCache(call);
    const outputs = forwardOutputs(p);
    const threads = threadsFor(forwardFlops(p), limit());
    return { outputs, threads, desc: forwardDesc(p, outputs.out, outputs.logsumexp, level(call), threads) };
  }

  function backward(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients {
    const native = loaded();
    checkRules(p);
    const fwd = checkSaved(p, saved, gradOut);
    const bufs = backwardBuffers(p);
    const threads = threadsFor(2.5 * forwardFlops(p), limit());
    if (!isEmpty(p)) {
      const desc = backwardDesc(p, fwd, gradOut, bufs, level(p), threads);
      callNative(() => native.backward(desc), backwardWorkspaceBytes(p));
    }
    const grads: Gradients = { dq: bufs.dq, dk: bufs.dk, dv: bufs.dv };
    if (bufs.dbias) return { ...grads, dbias: dbiasTensor(p, bufs.dbias) };
    return grads;
  }

  return {
    name: options.name ?? 'cpu-flash',
    deviceType: 'cpu',
    defaultPriority: options.priority ?? CPU_FLASH_PRIORITY,
    description:
      'Native FlashAttention-2 style kernel for the CPU: tiled online softmax, SIMD micro-kernels (AVX2, AVX-512, AVX512-BF16, AMX for bf16) picked at run time, a thread pool; fp32, bf16, fp16; forward and backward.',
    availability() {
      const load = addon();
      return load.ok ? { ok: true } : { ok: false, reason: load.reason };
    },
    rules: cpuFlashRules,
    tolerances: CPU_FLASH_TOLERANCES,
    kernels: isaKernels(runnable),
    forward(p: SdpaParams): ForwardOutputs {
      const native = loaded();
      const { outputs, threads, desc } = prepare(p);
      if (!isEmpty(p)) callNative(() => native.forward(desc), forwardWorkspaceBytes(p, threads));
      return outputs;
    },
    async forwardAsync(p: SdpaParams): Promise<ForwardOutputs> {
      const native = loaded();
      const { outputs, threads, desc } = prepare(p);
      if (!isEmpty(p)) {
        try {
          await native.forwardAsync(desc);
        } catch (e) {
          throw fromNative(e, forwardWorkspaceBytes(p, threads));
        }
      }
      return outputs;
    },
    backward,
    // Its fp16/bf16 backward sums delta from this call's own softmax, so only fp32 takes a caller's out.
    backwardFrom: { rules: [savedDeltaDtype], run: backward },
    buildInfo(kernel?: string) {
      const load = addon();
      if (!load.ok) return { native: false, reason: load.reason };
      // A kernel name is an ISA level (isa.ts); the addon says which path each dtype takes there.
      const requested = kernel === undefined ? level() : checkIsa(kernel);
      const info = load.addon.buildInfo(requested);
      const out: Record<string, string | number | boolean | readonly string[]> = {
        native: true,
        addon: load.path,
        addonOrigin: load.origin,
        kernel: requested,
        isa: info.isa,
        compiledIsas: info.compiledIsas,
        runnableIsas: info.runnableIsas,
        compiler: info.compiler,
        napiVersion: info.napiVersion,
        threads: limit(),
      };
      for (const [dtype, path] of Object.entries(info.forwardPath ?? {})) out[`forward.${dtype}`] = path;
      for (const [dtype, path] of Object.entries(info.backwardPath ?? {})) out[`backward.${dtype}`] = path;
      return out;
    },
  };
}

/** The registered instance (see ../index.ts). */
export const cpuFlashBackend: Backend = createCpuFlashBackend();
