// fast-check arbitraries of valid calls: random shapes (zero sizes included), dtypes, layouts
// (strided bshd views), every feature of SdpaParams, and poisoned values planted in the inputs.
// Small sizes on purpose: the budget goes into many different cases, not into large ones.
import fc from 'fast-check';
import { FLOAT_DTYPES } from '@attn/core';
import type { CaseSpec, MaskSpec, PoisonSpec } from '../cases.js';

/** What a planted value may be: NaN, infinities, beyond float16's range, huge in float32, tiny and subnormal. */
export const POISON_VALUES: readonly number[] = [NaN, Infinity, -Infinity, 1e5, -3e5, 1e20, 1e-30, 1e-45, 0];

const window = fc.constantFrom(-1, 0, 1, 3, 8, 2 ** 40);

/** A sequence length: mostly small odd ones, sometimes 0 (every fused backend declines; cpu-math gives lse -inf). */
const seqLen = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 1, max: 40 }) },
  { weight: 1, arbitrary: fc.constant(0) },
);

const poison: fc.Arbitrary<PoisonSpec> = fc.record({
  tensor: fc.constantFrom('q', 'k', 'v', 'mask'),
  index: fc.nat({ max: 1 << 20 }),
  value: fc.constantFrom(...POISON_VALUES),
});

function maskShape(kind: MaskSpec['kind'], B: number, Hq: number, Sq: number, Sk: number): fc.Arbitrary<MaskSpec> {
  return fc
    .record({
      shape: fc.constantFrom([Sq, Sk], [B, Hq, Sq, Sk], [B, 1, 1, Sk], [1, Hq, Sq, Sk], [Sk]),
      fullyMaskedRows: fc.boolean(),
    })
    .map(({ shape, fullyMaskedRows }) => ({ kind, shape, fullyMaskedRows: fullyMaskedRows && shape.length > 1 }));
}

/** One valid call of the given dtypes (default every float dtype). */
export function caseSpec(dtypes: readonly (typeof FLOAT_DTYPES)[number][] = FLOAT_DTYPES): fc.Arbitrary<CaseSpec> {
  return fc
    .record({
      dtype: fc.constantFrom(...dtypes),
      batch: fc.integer({ min: 1, max: 3 }),
      headsKV: fc.integer({ min: 1, max: 3 }),
      group: fc.constantFrom(1, 1, 2, 3),
      seqQ: seqLen,
      seqK: seqLen,
      headDim: fc.constantFrom(1, 3, 8, 16, 24, 64, 72),
      headDimV: fc.oneof(
        { weight: 8, arbitrary: fc.constant(-1) },
        { weight: 2, arbitrary: fc.constantFrom(1, 5, 16) },
        { weight: 1, arbitrary: fc.constant(0) },
      ),
      layout: fc.constantFrom('bhsd', 'bshd'),
      varlen: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      lens: fc.array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 })), {
        minLength: 3,
        maxLength: 3,
      }),
      // Explicit scales up to 4: logits to ~30 on these inputs, as softcap 30 gives. The backward's
      // extra error there (P from the fp32 logsumexp) is the accuracy rule's gradient allowance
      // (naive.ts). Beyond ~30 two more things would need a rule of their own: the naive
      // implementation in a half type rounds each logit to the dtype (half an ulp is 0.125 at 60 in
      // bf16) and drifts from the reference past NAIVE_SANITY, and a fused forward's exp of the logit
      // against the row max, both fp32, errs by u32 |logit| where the naive's errs by u32 |logit - max|
      // (cpu-flash out at scale 15: 3.7x naive).
      scale: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.double({ min: 0.05, max: 4, noNaN: true }) },
        { weight: 1, arbitrary: fc.constantFrom(-0.5, 1e39) },
      ),
      mask: fc.constantFrom(null, null, 'bool', 'additive'),
      causal: fc.boolean(),
      alignment: fc.constantFrom('upperLeft', 'lowerRight'),
      window: fc.option(fc.tuple(window, window), { freq: 4 }),
      alibi: fc.constantFrom(undefined, undefined, undefined, 'perHead', 'perBatchHead'),
      softcap: fc.constantFrom(0, 0, 0, 2.5, 30),
      dropoutP: fc.constantFrom(0, 0, 0, 0.2),
      deterministic: fc.boolean(),
      poison: fc.oneof(
        { weight: 3, arbitrary: fc.constant([]) },
        { weight: 2, arbitrary: fc.array(poison, { minLength: 1, maxLength: 3 }) },
      ),
      maskSeed: fc.nat(),
    })
    .chain((r) => {
      const headsQ = r.headsKV * r.group;
      const headDimV = r.headDimV < 0 ? r.headDim : r.headDimV;
      const varlen = r.varlen
        ? { seqlensQ: r.lens.slice(0, r.batch).map((l) => l[0]), seqlensK: r.lens.slice(0, r.batch).map((l) => l[1]) }
        : undefined;
      const seqQ = varlen ? Math.max(...varlen.seqlensQ) : r.seqQ;
      const seqK = varlen ? Math.max(...varlen.seqlensK) : r.seqK;
      const base: CaseSpec = {
        name: 'fuzz',
        dtype: r.dtype,
        batch: r.batch,
        headsQ,
        headsKV: r.headsKV,
        seqQ,
        seqK,
        headDim: r.headDim,
        headDimV,
        layout: varlen ? 'bhsd' : r.layout,
        enableGqa: r.group > 1,
        scale: r.scale,
        causal: r.causal,
        alignment: r.alignment,
        window: r.window ?? undefined,
        alibi: r.alibi,
        softcap: r.softcap,
        dropoutP: r.dropoutP,
        deterministic: r.deterministic,
        varlen,
        // A bool mask carries no values: poison meant for it goes nowhere, which is a case too.
        poison: r.poison,
      };
      // Varlen takes no mask.
      if (!r.mask || varlen) return fc.constant(base);
      return maskShape(r.mask, r.batch, headsQ, seqQ, seqK).map((mask) => ({ ...base, mask }));
    })
    .map((spec) => ({ ...spec, name: describeSpec(spec) }));
}

/** A short readable name: shape, dtype and the features in use. */
export function describeSpec(s: CaseSpec): string {
  const parts = [
    `${s.dtype} B${s.batch} H${s.headsQ}/${s.headsKV} S${s.seqQ}x${s.seqK} D${s.headDim}/${s.headDimV} ${s.layout}`,
  ];
  if (s.varlen) parts.push(`varlen q[${s.varlen.seqlensQ.join(',')}] k[${s.varlen.seqlensK.join(',')}]`);
  if (s.scale !== undefined) parts.push(`scale ${s.scale}`);
  if (s.mask)
    parts.push(`${s.mask.kind} mask [${s.mask.shape.join(',')}]${s.mask.fullyMaskedRows ? ' fully-masked-rows' : ''}`);
  if (s.causal) parts.push(`causal ${s.alignment}`);
  if (s.window) parts.push(`window [${s.window.join(',')}]`);
  if (s.alibi) parts.push(`alibi ${s.alibi}`);
  if (s.softcap) parts.push(`softcap ${s.softcap}`);
  if (s.dropoutP) parts.push(`dropout ${s.dropoutP}`);
  if (s.poison?.length) parts.push(`poison ${s.poison.map((p) => `${p.tensor}[${p.index}]=${p.value}`).join(' ')}`);
  return parts.join(', ');
}
