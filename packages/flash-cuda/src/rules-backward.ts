// The backward's own rule: at D > 192 its tiles need more shared memory per block than ~100 KB GPUs
// (sm86, sm89, sm120) allow. Stated in bytes, per head-dim bucket, so `explain` says exactly what is
// missing; the numbers are the generator's (scripts/generate-bwd-instantiations.mjs --smem-json), and
// rules.test.ts fails when the two drift apart.
import { rule, type Rule } from '@attn/core';

/** Dynamic shared memory per block of the dK/dV kernel and of the deterministic dQ kernel, per bucket. */
export const BWD_SMEM_BYTES: ReadonlyArray<{
  readonly headDim: number;
  /** dK/dV kernel with one stage of Q/dO: the minimum. */
  readonly dkdv: number;
  /** dK/dV kernel with two stages (prefetch), used where the GPU allows it. */
  readonly dkdvPrefetch: number;
  /** The deterministic mode's dQ kernel. */
  readonly dq: number;
}> = Object.freeze([
  { headDim: 64, dkdv: 66560, dkdvPrefetch: 82944, dq: 32768 },
  { headDim: 128, dkdv: 90624, dkdvPrefetch: 107008, dq: 65536 },
  { headDim: 192, dkdv: 78336, dkdvPrefetch: 102912, dq: 73728 },
  { headDim: 256, dkdv: 102912, dkdvPrefetch: 135680, dq: 98304 },
]);

export const backwardSharedMemory: Rule = rule('backwardSharedMemory', (p, ctx) => {
  if (!p.requiresGrad || !ctx.device) return null;
  const bucket = BWD_SMEM_BYTES.find((b) => b.headDim >= p.headDim);
  if (!bucket) return null; // headDimAtMost(256) reports it
  const need = p.deterministic ? Math.max(bucket.dkdv, bucket.dq) : bucket.dkdv;
  const have = ctx.device.sharedMemoryPerBlockOptin;
  if (need <= have) return null;
  return (
    `Backward with head dim ${p.headDim} needs ${need} bytes of shared memory per block; ${ctx.device.name} allows ${have}. ` +
    'Use requiresGrad: false (inference), head dim <= 192, or a GPU with more shared memory per block (sm80, sm90).'
  );
});
