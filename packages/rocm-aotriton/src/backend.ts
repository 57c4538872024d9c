// 'aotriton-flash' and 'aotriton-efficient': one binding to AOTriton's v3 attn_fwd/attn_bwd, two
// rule sets (PyTorch's flash and memory-efficient ROCm gates). All checks happen in the rules; the
// forward and backward here allocate, marshal to plain objects and call the thin native shim.
import {
  AttnInputError,
  DeviceError,
  empty,
  forwardOutput,
  zeros,
  type Availability,
  type Backend,
  type ForwardOutputs,
  type Gradients,
  type SdpaParams,
  type Tensor,
} from '@attn/core';
import { currentStream, rocmBuildInfo } from '@attn/rocm';
import { enableExperimentalAotritonArchs } from './experimental.js';
import { backwardArgs } from './marshal/backward.js';
import { forwardArgs } from './marshal/forward.js';
import { lseConvertArgs } from './marshal/lse.js';
import { planBackward, planForward } from './marshal/plan.js';
import { aotritonAvailability, aotritonVersion, loadAotriton, type AotritonAddon } from './native.js';
import { efficientRules, flashRules, type AotritonRuleDeps } from './rules.js';
import { versionString } from './version.js';

export type AotritonKind = 'flash' | 'efficient';

export const defaultRuleDeps: AotritonRuleDeps = {
  version: aotritonVersion,
  experimental: () => enableExperimentalAotritonArchs(),
};

function requireAddon(): AotritonAddon {
  const a = aotritonAvailability();
  const load = loadAotriton();
  if (!a.ok || !load.ok)
    throw new DeviceError(
      'ATTN_DEVICE_UNAVAILABLE',
      `AOTriton is unavailable: ${a.ok ? 'the addon did not load' : a.reason}`,
    );
  return load.addon;
}

const checkedDevices = new Set<number>();

/** check_gpu once per device: a GPU without kernels is a clear error, not a failed launch. */
function checkGpu(addon: AotritonAddon, device: number, stream: bigint): void {
  if (checkedDevices.has(device)) return;
  const err = addon.checkGpu(stream);
  if (err !== 0) {
    throw new DeviceError(
      'ATTN_ROCM_NO_BINARY',
      `AOTriton has no kernels for rocm:${device} (check_gpu returned hipError ${err}); use a GPU AOTriton supports or prefer CK (preferredRocmFaLibrary('ck') from @attn/rocm).`,
    );
  }
  checkedDevices.add(device);
}

function forward(p: SdpaParams): ForwardOutputs {
  const addon = requireAddon();
  const stream = currentStream(p.device.index);
  checkGpu(addon, p.device.index, stream);
  const plan = planForward(p);
  const device = p.device;
  const out = forwardOutput(p, plan.outShape, { dtype: p.dtype, device }); // the call's out, or a new tensor
  const logsumexp = empty(plan.lseShape, { dtype: 'float32', device });
  const aotLse =
    plan.aotLse === 'alias'
      ? logsumexp.reshape(plan.aotLseShape)
      : empty(plan.aotLseShape, { dtype: 'float32', device });
  const counter = plan.atomicCounter ? zeros([1], { dtype: 'int32', device }) : null;
  try {
    addon.forward(forwardArgs(p, { out, aotLse, atomicCounter: counter?.dataPointer() ?? null }), stream, false);
    addon.convertLse(lseConvertArgs(p, 'toAttn', aotLse, logsumexp), stream);
  } finally {
    counter?.dispose();
    if (plan.aotLse === 'scratch') aotLse.dispose();
  }
  return { out, logsumexp };
}

function backward(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients {
  const addon = requireAddon();
  const stream = currentStream(p.device.index);
  const device = p.device;
  const f32 = { dtype: 'float32' as const, device };
  const mask = p.mask;
  if (mask && mask.expandedStrides.some((s, i) => s === 0 && [p.batch, p.headsQ, p.seqQ, p.seqK][i]! > 1)) {
    throw new AttnInputError(
      'ATTN_MASK',
      'AOTriton cannot reduce the bias gradient to a broadcast mask; expand the mask to [B, Hq, Sq, Sk] (see the aotritonBias rule).',
    );
  }
  const dq = empty(p.query.shape, { dtype: p.dtype, device });
  const dk = empty(p.key.shape, { dtype: p.dtype, device });
  const dv = empty(p.value.shape, { dtype: p.dtype, device });
  const dbias = mask ? empty(mask.tensor.shape, { dtype: p.dtype, device }) : null;
  const { aotLseShape } = planBackward(p);
  const aotLse = empty(aotLseShape, f32);
  const delta = empty(aotLseShape, f32);
  const dqAcc = zeros(p.query.shape, f32);
  try {
    addon.convertLse(lseConvertArgs(p, 'toAotriton', aotLse, saved.logsumexp), stream);
    const args = backwardArgs(p, { out: saved.out, gradOut, dq, dk, dv, dbias, aotLse, delta, dqAcc });
    addon.backward(args, stream, p.deterministic);
  } finally {
    aotLse.dispose();
    delta.dispose();
    dqAcc.dispose();
  }
  return dbias ? { dq, dk, dv, dbias } : { dq, dk, dv };
}

export function makeAotritonBackend(kind: AotritonKind, deps: AotritonRuleDeps = defaultRuleDeps): Backend {
  return {
    name: `aotriton-${kind}`,
    deviceType: 'rocm',
    defaultPriority: kind === 'flash' ? 200 : 150,
    description:
      kind === 'flash'
        ? "AOTriton's flash attention on AMD GPUs (PyTorch's ROCm flash path): fp16/bf16, GQA, causal/window, varlen, backward"
        : "AOTriton's attention with an additive bias (PyTorch's ROCm memory-efficient path): fp16/bf16/fp32, no GQA, varlen, backward",
    availability: (): Availability => aotritonAvailability(),
    rules: kind === 'flash' ? flashRules(deps) : efficientRules(deps),
    forward,
    backward,
    buildInfo: (): Record<string, string | number> => {
      const load = loadAotriton();
      if (!load.ok) return { library: 'AOTriton', unavailable: load.reason };
      const info = load.addon.info();
      return {
        library: 'AOTriton',
        version: versionString(info),
        gitSha: info.gitSha,
        fwdParamsVersion: info.fwdParamsVersion,
        bwdParamsVersion: info.bwdParamsVersion,
        archs: info.archs,
        runtime: JSON.stringify(rocmBuildInfo()),
      };
    },
  };
}

export const aotritonFlash: Backend = makeAotritonBackend('flash');
export const aotritonEfficient: Backend = makeAotritonBackend('efficient');
