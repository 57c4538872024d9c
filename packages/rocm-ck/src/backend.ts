// 'ck-flash' and 'ck-efficient': CK tile's fmha_fwd/fmha_bwd behind two rule sets. Allocation and
// marshalling here; the native shim only copies traits/args into CK's structs and calls the API.
import {
  DeviceError,
  empty,
  forwardOutput,
  zeros,
  type Backend,
  type ForwardOutputs,
  type Gradients,
  type SdpaParams,
  type Tensor,
} from '@attn/core';
import { currentStream, type FaLibraryDeps } from '@attn/rocm';
import { forwardArgs, forwardTraits } from './marshal/args.js';
import { backwardArgs, backwardTraits, dqAccSplits } from './marshal/backward.js';
import { expandedShape, headGroupSumArgs } from './marshal/head-groups.js';
import { ckAvailability, loadCk, type CkAddon } from './native.js';
import { efficientRules, flashRules, type BwdLayoutProbe } from './rules.js';

export type CkKind = 'flash' | 'efficient';

function requireAddon(): CkAddon {
  const a = ckAvailability();
  const load = loadCk();
  if (!a.ok || !load.ok)
    throw new DeviceError(
      'ATTN_DEVICE_UNAVAILABLE',
      `CK is unavailable: ${a.ok ? 'the addon did not load' : a.reason}`,
    );
  return load.addon;
}

function noInstance(what: string, result: number, p: SdpaParams): never {
  throw new DeviceError(
    'ATTN_CK_NO_INSTANCE',
    `CK ${what} found no compiled kernel instance for this call (returned ${result}): ${p.dtype}, head dim ${p.headDim}/${p.headDimV}. Rebuild @attn/rocm-ck with more instances or use AOTriton.`,
  );
}

function forward(p: SdpaParams): ForwardOutputs {
  const addon = requireAddon();
  const device = p.device;
  const totalQ = p.varlen ? p.query.shape[0]! : 0;
  // The call's out (fmha_fwd_args takes o_ptr with its strides), or a new tensor.
  const out = forwardOutput(p, p.varlen ? [totalQ, p.headsQ, p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV], {
    dtype: p.dtype,
    device,
  });
  const lse = empty(p.varlen ? [p.headsQ, totalQ] : [p.batch, p.headsQ, p.seqQ], { dtype: 'float32', device });
  const r = addon.forward(forwardTraits(p), forwardArgs(p, { out, lse }), currentStream(device.index));
  if (r < 0) noInstance('fmha_fwd', r, p);
  return { out, logsumexp: lse };
}

function backward(p: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients {
  const addon = requireAddon();
  const device = p.device;
  const f32 = { dtype: 'float32' as const, device };
  const dq = zeros(p.query.shape, { dtype: p.dtype, device }); // CK accumulates dq
  // GQA/MQA: CK writes dK/dV per query head; they are summed into dk/dv afterwards (head-groups.ts).
  // With sequsedK, CK writes no dK/dV row past a sequence's used keys, so what it writes into starts
  // at zero (those gradients are 0).
  const grouped = p.headsQ !== p.headsKV;
  const ckWrites = p.sequsedK ? zeros : empty;
  const dk = (grouped ? empty : ckWrites)(p.key.shape, { dtype: p.dtype, device });
  const dv = (grouped ? empty : ckWrites)(p.value.shape, { dtype: p.dtype, device });
  const dbias = p.mask ? empty(p.mask.tensor.shape, { dtype: p.dtype, device }) : null;
  const dkHeads = grouped ? ckWrites(expandedShape(p, p.headDim), { dtype: p.dtype, device }) : dk;
  const dvHeads = grouped ? ckWrites(expandedShape(p, p.headDimV), { dtype: p.dtype, device }) : dv;
  const d = empty(saved.logsumexp.shape, f32);
  const splits = dqAccSplits(p);
  const accShape = p.varlen
    ? [splits, p.headsQ, p.query.shape[0]!, p.headDim]
    : [splits, p.batch, p.headsQ, p.seqQ, p.headDim];
  const dqAcc = zeros(accShape, f32);
  const stream = currentStream(device.index);
  try {
    const args = backwardArgs(p, {
      out: saved.out,
      lse: saved.logsumexp,
      gradOut,
      d,
      dq,
      dk: dkHeads,
      dv: dvHeads,
      dbias,
      dqAcc,
    });
    const r = addon.backward(backwardTraits(p), args, stream);
    if (r < 0) noInstance('fmha_bwd', r, p);
    if (grouped) {
      addon.sumHeadGroups(headGroupSumArgs(p, dkHeads, dk), stream);
      addon.sumHeadGroups(headGroupSumArgs(p, dvHeads, dv), stream);
    }
  } finally {
    d.dispose();
    dqAcc.dispose();
    if (grouped) {
      dkHeads.dispose();
      dvHeads.dispose();
    }
  }
  return dbias ? { dq, dk, dv, dbias } : { dq, dk, dv };
}

export function makeCkBackend(kind: CkKind, fa?: () => FaLibraryDeps, bwdLayout?: BwdLayoutProbe): Backend {
  return {
    name: `ck-${kind}`,
    deviceType: 'rocm',
    defaultPriority: kind === 'flash' ? 190 : 140,
    description:
      kind === 'flash'
        ? "Composable Kernel's tile fmha (PyTorch's CK flash path): fp16/bf16, GQA (forward and backward), causal/window, ALiBi, varlen with sequsedK, backward"
        : "Composable Kernel's tile fmha with an additive bias (PyTorch's CK memory-efficient path): fp16/bf16, no GQA",
    availability: ckAvailability,
    rules: kind === 'flash' ? flashRules(fa, bwdLayout) : efficientRules(fa, bwdLayout),
    forward,
    backward,
    buildInfo: (): Record<string, string> => {
      const load = loadCk();
      if (!load.ok) return { library: 'CK', unavailable: load.reason };
      const info = load.addon.info();
      return {
        library: 'CK',
        archs: info.archs,
        ckCommit: info.ckCommit,
        backward: info.bwdDqAccLayout ? 'dq_acc layout' : 'declined (workspace layout)',
      };
    },
  };
}

export const ckFlash: Backend = makeCkBackend('flash');
export const ckEfficient: Backend = makeCkBackend('efficient');
