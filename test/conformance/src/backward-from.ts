// sdpaBackwardFrom checked the way a ring step uses it: the keys of a dense call cut into two blocks,
// each block's backward run with the full call's out and logsumexp (the backend's own forward of the
// whole row), the blocks' dq summed and dk/dv put side by side, and the result judged against
// cpu-math's backward of the whole call by the accuracy rule (naive implementation and gradient
// allowance as every backend). Causal cases cut the upper-left causal row as a ring does: the first
// block is upper-left causal on its keys, the second lower-right (query i sees block key j iff
// j + split <= i), so rows before the cut see nothing of the second block.
import { sdpaBackward, sdpaBackwardFrom, sdpaForward } from '@attn/core';
import type { Device, SdpaOptions, Tensor } from '@attn/core';
import { judge, type Verdict } from './accuracy.js';
import type { CaseSpec } from './cases.js';
import { makeInputs } from './inputs.js';
import { naiveAttention } from './naive.js';
import { REFERENCE } from './run-case.js';

export interface BackwardFromCase {
  /** Dense bhsd, seqQ = seqK, no mask, no dropout; `causal` is upper-left over the whole row. */
  readonly spec: CaseSpec;
  /** Keys [0, split) form the first block, [split, seqK) the second (empty when split = seqK). */
  readonly split: number;
}

type Grads = Record<'dq' | 'dk' | 'dv', Float64Array>;

export interface BackwardFromResult {
  /** The blocks' gradients put together. */
  readonly got: Grads;
  /** cpu-math's backward of the whole call (float64). */
  readonly ref: Grads;
  /** The naive implementation's gradients and their allowances (the accuracy rule's inputs). */
  readonly naive: Grads;
  readonly allowance: Grads;
}

/** The verdicts of dq, dk, dv of `backend` on `c` with the inputs of `seed`, on `device`. */
export function checkBackwardFrom(backend: string, c: BackwardFromCase, seed: bigint, device: Device): Verdict[] {
  const r = backwardFromBlocks(backend, c, seed, device);
  return (['dq', 'dk', 'dv'] as const).map((w) =>
    judge(w, c.spec.dtype, r.got[w], r.ref[w], r.naive[w], { allowance: r.allowance[w] }),
  );
}

/** The blocks' gradients beside the whole call's reference (see the header). */
export function backwardFromBlocks(
  backend: string,
  c: BackwardFromCase,
  seed: bigint,
  device: Device,
): BackwardFromResult {
  const { spec, split } = c;
  const inputs = makeInputs(spec, seed, device);
  const base: SdpaOptions = { enableGqa: spec.enableGqa, scale: 1 / Math.sqrt(spec.headDim) };
  const owned: Tensor[] = [];
  try {
    const ref = sdpaForward(inputs.ref.q, inputs.ref.k, inputs.ref.v, {
      ...base,
      isCausal: spec.causal,
      backends: [REFERENCE],
      requiresGrad: true,
    });
    const refGrads = sdpaBackward(inputs.ref.gradOut, ref);
    owned.push(ref.out, ref.logsumexp, refGrads.dq, refGrads.dk, refGrads.dv);
    const t = inputs.test;
    const full = sdpaForward(t.q, t.k, t.v, { ...base, isCausal: spec.causal, backends: [backend] });
    owned.push(full.out, full.logsumexp);
    const { batch: B, headsKV: Hk, seqK: S, headDim: D, headDimV: Dv } = spec;
    const dq = new Float64Array(t.q.numel);
    const dk = new Float64Array(t.k.numel);
    const dv = new Float64Array(t.v.numel);
    const blocks = [
      { lo: 0, n: split, alignment: 'upperLeft' as const },
      { lo: split, n: S - split, alignment: 'lowerRight' as const },
    ];
    for (const b of blocks.filter((x) => x.n > 0)) {
      const g = sdpaBackwardFrom(
        t.q,
        t.k.narrow(2, b.lo, b.n),
        t.v.narrow(2, b.lo, b.n),
        { out: full.out, logsumexp: full.logsumexp },
        t.gradOut,
        { ...base, isCausal: spec.causal, alignment: b.alignment, backends: [backend] },
      );
      owned.push(g.dq, g.dk, g.dv);
      const gq = g.dq.toFloat64Array();
      for (let i = 0; i < dq.length; i++) dq[i] = dq[i]! + gq[i]!;
      place(dk, g.dk.toFloat64Array(), B * Hk, S, b.lo, b.n, D);
      place(dv, g.dv.toFloat64Array(), B * Hk, S, b.lo, b.n, Dv);
    }
    const naive = naiveAttention(spec, inputs.values, null, true);
    const allow = naive.allowance!;
    return {
      got: { dq, dk, dv },
      ref: { dq: refGrads.dq.toFloat64Array(), dk: refGrads.dk.toFloat64Array(), dv: refGrads.dv.toFloat64Array() },
      naive: { dq: naive.dq, dk: naive.dk, dv: naive.dv },
      allowance: { dq: allow.dq, dk: allow.dk, dv: allow.dv },
    };
  } finally {
    for (const x of owned) x.dispose();
    for (const x of [inputs.test, inputs.ref]) for (const y of [x.q, x.k, x.v, x.gradOut]) y.dispose();
  }
}

/** Copies a block's [rows, n, width] rows into [rows, S, width] at key offset lo. */
function place(dst: Float64Array, src: Float64Array, rows: number, S: number, lo: number, n: number, width: number) {
  for (let r = 0; r < rows; r++) dst.set(src.subarray(r * n * width, (r + 1) * n * width), (r * S + lo) * width);
}
