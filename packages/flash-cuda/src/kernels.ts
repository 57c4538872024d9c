// The kernel families the `kernel` call option names for flash-cuda (core's Backend.kernels), and what
// each can run: the TS side of native/src/dispatch.cu make_plan and bwd_dispatch.cu choose (KernelFamily),
// which throw for anything declined here. Without the option the plan picks: the Hopper kernels on sm90
// where a call can take them, the mma.sync kernels everywhere else.
import { type KernelChoice, kernelWindow, type RuleContext, type SdpaParams, type Tensor } from '@attn/core';
import { addonLoad } from './native.js';

/** nums[NUM.kernelFamily]: native/src/dispatch.h KernelFamily. */
export const KERNEL_FAMILY = Object.freeze({ auto: 0, sm80: 1, sm90: 2, sm90BwdTmaWs: 3, sm90BwdCpAsync: 4 } as const);

const FAMILY_BY_NAME: Readonly<Record<string, number>> = Object.freeze({
  sm80: KERNEL_FAMILY.sm80,
  sm90: KERNEL_FAMILY.sm90,
  'sm90-bwd-tma-ws': KERNEL_FAMILY.sm90BwdTmaWs,
  'sm90-bwd-cp-async': KERNEL_FAMILY.sm90BwdCpAsync,
});

export function kernelFamilyOf(p: SdpaParams): number {
  return (p.kernel !== null && FAMILY_BY_NAME[p.kernel]) || KERNEL_FAMILY.auto;
}

/** Head dims with a Hopper backward: the 64 and 128 buckets, and 256 (D 193..256); none for 129..192. */
function sm90Backward(headDim: number): boolean {
  return headDim <= 128 || headDim > 192;
}

/**
 * Why no Hopper forward kernel can run this call: the device, the build and the lean feature set they share
 * (the 16-bit kernels' and the fp8 kernel's). Empty when they can.
 */
export function hopperLeanDeclines(p: SdpaParams, ctx: RuleContext): string[] {
  const why: string[] = [];
  const d = ctx.device;
  if (d === null)
    why.push(`the device's compute capability is unknown (${ctx.deviceUnknownReason ?? 'no reason given'})`);
  else if (d.major !== 9 || d.minor !== 0)
    why.push(`it runs on sm90 (H100/H200) only; this device is sm${d.major}${d.minor}`);
  const load = addonLoad();
  if (load.ok && !load.addon.buildInfo().cudaArchs.split(/[;, ]/).includes('90a')) {
    why.push(
      `the addon was built without sm_90a (archs ${load.addon.buildInfo().cudaArchs}); rebuild with ATTN_CUDA_ARCHS including 90a`,
    );
  }
  const extras = [
    p.alibiSlopes ? 'ALiBi' : null,
    p.softcap > 0 ? 'softcap' : null,
    p.dropout ? 'dropout' : null,
    kernelWindow(p).left >= 0 ? 'a left window bound' : null,
    p.scale > 0 ? null : 'scale <= 0',
  ].filter(Boolean);
  if (extras.length > 0) why.push(`it has no ${extras.join(', ')}`);
  if (p.paged || p.kvCache) why.push('it has no paged K/V (block table or kv cache)');
  return why;
}

/** Why the Hopper (wgmma) kernels cannot run this call on this device; null when they can. */
export function sm90Declines(p: SdpaParams, ctx: RuleContext): string | null {
  const why = hopperLeanDeclines(p, ctx);
  // The fp8 kernel never packs GQA rows (it reads K/V per query head), so short fp8 queries with GQA run there.
  if (!p.descale && p.headsQ > p.headsKV && p.seqQ <= 64)
    why.push('it has no packed GQA (query length <= 64 with GQA: decode)');
  if (p.requiresGrad && !sm90Backward(p.headDim)) why.push(`its backward has no head dim ${p.headDim} (129..192)`);
  return why.length > 0 ? why.join('; ') : null;
}

/** A dense tensor's [batch, head, row] strides as 4-D tensor maps take them: multiples of 8, positive where stepped. */
function tmaStrides(t: Tensor, extents: readonly [number, number, number]): boolean {
  const strides = [t.strides[0]!, t.strides[1]!, t.strides[2]!];
  return strides.every((s, i) => s % 8 === 0 && (extents[i]! <= 1 || s > 0)) && t.dataPointer() % 16n === 0n;
}

/**
 * Why the TMA warp-specialized backward (native/src/sm90/flash_bwd_sm90_tma_ws_kernel.h) cannot run this call
 * beyond what sm90Declines says; null when it can or the call has no backward. bwd_dispatch.cu refuses the same
 * (tma_ws_declines), and also a gradOut whose layout a tensor map cannot describe (known only at the backward).
 */
export function tmaWsBackwardDeclines(p: SdpaParams): string | null {
  if (!p.requiresGrad) return null;
  const why: string[] = [];
  if (p.headDim > 128)
    why.push(`its backward has head dims up to 128 only (the D64 and D128 buckets), not ${p.headDim}`);
  if (p.varlen !== null) why.push('its backward has no varlen');
  if (p.sequsedK) why.push('its backward has no sequsedK');
  if (p.varlen === null) {
    const q: [number, number, number] = [p.batch, p.headsQ, p.seqQ];
    const kv: [number, number, number] = [p.batch, p.headsKV, p.seqK];
    if (p.headDim % 8 !== 0 || !tmaStrides(p.query, q) || !tmaStrides(p.key, kv) || !tmaStrides(p.value, kv))
      why.push(
        'its backward reads through TMA tensor maps: 16-byte aligned tensors, strides positive multiples of 8 elements, head dim a multiple of 8',
      );
  }
  return why.length > 0 ? why.join('; ') : null;
}

function tmaWsDeclines(p: SdpaParams, ctx: RuleContext): string | null {
  const why = [sm90Declines(p, ctx), tmaWsBackwardDeclines(p)].filter((x) => x !== null);
  return why.length > 0 ? why.join('; ') : null;
}

export const FLASH_KERNELS: readonly KernelChoice[] = Object.freeze([
  Object.freeze({
    name: 'sm90',
    description:
      'Hopper wgmma kernels (sm90, sm_90a builds): forward warp-specialized (Q, K and V by TMA on dense 16-byte ' +
      'aligned tensors, cp.async on varlen, sequsedK or misaligned ones); backward ' +
      'TMA warp-specialized dK/dV at D <= 128 on dense tensors, cp.async wgmma dK/dV elsewhere. ' +
      'Calls without ALiBi, softcap, dropout, a left window, paged K/V or packed GQA; never split-KV',
    check: sm90Declines,
  }),
  Object.freeze({
    name: 'sm90-bwd-tma-ws',
    description:
      "'sm90' with the backward on the TMA warp-specialized dK/dV kernel only (FlashAttention-3's layout: a producer " +
      "warpgroup, dQ by TMA reductions; what 'sm90' and the plan run wherever it takes the call): D <= 128, dense " +
      '16-byte aligned tensors, no varlen or sequsedK',
    check: tmaWsDeclines,
  }),
  Object.freeze({
    name: 'sm90-bwd-cp-async',
    description:
      "'sm90' with the backward on the cp.async wgmma dK/dV kernel (two warpgroups that load and compute, dQ by fp32 " +
      "atomics), at every head dim it is built for: what 'sm90' and the plan run where the TMA kernel does not",
    check: sm90Declines,
  }),
  Object.freeze({
    name: 'sm80',
    description:
      'mma.sync kernels (FlashAttention-2 style; every sm80+ GPU, every feature): forward tiles by head dim, split-KV; backward row-tiled or 2-D tiled dK/dV',
  }),
]);
