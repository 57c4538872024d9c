// The fp8 forward's limits (native/src/sm90/flash_fwd_sm90_fp8_kernel.h; dispatch.cu make_plan refuses the
// same): float8_e4m3 q, k, v with per-tensor descale factors run only on the Hopper fp8 kernel, never on a
// 16-bit kernel. Calls without fp8 inputs pass.
import { type RuleContext, type Rule, type SdpaParams, type Tensor } from '@attn/core';
import { hopperLeanDeclines } from './kernels.js';

/** q, k, v strides that let 16-byte chunks tile every row (in bytes: fp8 elements). */
function rowChunks(t: Tensor): boolean {
  return t.strides.slice(0, 3).every((s) => s % 16 === 0);
}

/** Why the fp8 kernel cannot run this fp8 call; null when it can or the call has no fp8 inputs. */
export function fp8Declines(p: SdpaParams, ctx: RuleContext): string | null {
  if (!p.descale) return null;
  const why = hopperLeanDeclines(p, ctx);
  if (p.headDim > 128 || p.headDim % 16 !== 0)
    why.push(`it takes head dims up to 128 in steps of 16 (got ${p.headDim}); pad the head dim with zeros`);
  if (p.varlen) why.push('it has no varlen');
  if (p.kernel === 'sm80') why.push("it is a Hopper kernel, and the kernel option names 'sm80'");
  if (!rowChunks(p.query) || !rowChunks(p.key) || !rowChunks(p.value))
    why.push('it needs q, k and v strides that are multiples of 16 elements; call .contiguous() on them');
  return why.length > 0 ? `The fp8 (float8_e4m3) forward cannot run this call: ${why.join('; ')}.` : null;
}

/** fp8 inputs: the fp8 kernel's limits (fp8Declines). */
export const fp8Kernel: Rule = Object.freeze({ name: 'fp8Kernel', check: fp8Declines });

/** fp8 inputs: 16-byte aligned base addresses (the kernel copies 16-byte chunks only). Reads addresses. */
export const fp8Aligned: Rule = Object.freeze({
  name: 'fp8Aligned',
  readsValues: true,
  check(p: SdpaParams): string | null {
    if (!p.descale) return null;
    const tensors = [p.query, p.key, p.value, ...(p.out ? [p.out] : [])];
    if (tensors.every((t) => t.dataPointer() % 16n === 0n)) return null;
    return 'The fp8 (float8_e4m3) forward needs 16-byte aligned q, k, v and out; call .contiguous() on a sliced tensor.';
  },
});
