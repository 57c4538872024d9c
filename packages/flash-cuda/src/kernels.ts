// The kernel families the `kernel` call option names for flash-cuda (core's Backend.kernels), and what
// each can run: the TS side of native/src/dispatch.cu make_plan and bwd_dispatch.cu choose (KernelFamily),
// which throw for anything declined here. Without the option the plan picks: the Hopper kernels on sm90
// where a call can take them, the mma.sync kernels everywhere else.
import { type KernelChoice, kernelWindow, type RuleContext, type SdpaParams } from '@attn/core';
import { addonLoad } from './native.js';

/** nums[NUM.kernelFamily]: native/src/dispatch.h KernelFamily. */
export const KERNEL_FAMILY = Object.freeze({ auto: 0, sm80: 1, sm90: 2 } as const);

export function kernelFamilyOf(p: SdpaParams): number {
  return p.kernel === 'sm90' ? KERNEL_FAMILY.sm90 : p.kernel === 'sm80' ? KERNEL_FAMILY.sm80 : KERNEL_FAMILY.auto;
}

/** Head dims with a Hopper backward: the 64 and 128 buckets, and 256 (D 193..256); none for 129..192. */
function sm90Backward(headDim: number): boolean {
  return headDim <= 128 || headDim > 192;
}

/** Why the Hopper (wgmma) kernels cannot run this call on this device; null when they can. */
export function sm90Declines(p: SdpaParams, ctx: RuleContext): string | null {
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
  if (p.headsQ > p.headsKV && p.seqQ <= 64) why.push('it has no packed GQA (query length <= 64 with GQA: decode)');
  if (p.requiresGrad && !sm90Backward(p.headDim)) why.push(`its backward has no head dim ${p.headDim} (129..192)`);
  return why.length > 0 ? why.join('; ') : null;
}

export const FLASH_KERNELS: readonly KernelChoice[] = Object.freeze([
  Object.freeze({
    name: 'sm90',
    description:
      'Hopper wgmma kernels (sm90, sm_90a builds): forward warp-specialized at D <= 128, two-stage at D 256; backward wgmma dK/dV. ' +
      'Calls without ALiBi, softcap, dropout, a left window, paged K/V or packed GQA; never split-KV',
    check: sm90Declines,
  }),
  Object.freeze({
    name: 'sm80',
    description:
      'mma.sync kernels (FlashAttention-2 style; every sm80+ GPU, every feature): forward tiles by head dim, split-KV; backward row-tiled or 2-D tiled dK/dV',
  }),
]);
