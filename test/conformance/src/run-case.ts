// One case: ask the backend's rules whether it runs it; if so, run it (forward, and backward when
// the backend has one and its rules accept requiresGrad), run cpu-math in float64 on the same
// rounded inputs and the naive implementation in the case's dtype, and apply the accuracy rule to
// every output. If not, check that the decline is a proper one: reasons in explain, and
// NoBackendError (not a crash) from the call itself.
import {
  DTYPE_BYTES,
  full,
  getBackend,
  NoBackendError,
  normalizeParams,
  normalizeVarlenParams,
  noOutTensor,
  sdpaBackward,
} from '@attn/core';
import type {
  Device,
  FloatDType,
  ForwardOutputs,
  ForwardResult,
  Gradients,
  SdpaOptions,
  SdpaParams,
  Tensor,
  VarlenOptions,
} from '@attn/core';
import { judge, slackOf } from './accuracy.js';
import type { Verdict } from './accuracy.js';
import { callOptions, explainCall, forwardCall } from './call.js';
import type { CaseSpec } from './cases.js';
import { makeInputs } from './inputs.js';
import type { CaseInputs } from './inputs.js';
import { naiveAttention } from './naive.js';
import { poisonAllocator } from './poison.js';

export const REFERENCE = 'cpu-math';

/**
 * A backend's own entry points in place of sdpaForward / sdpaBackward, for cases that force what
 * selection would not pick (a kernel or split count by name, a kernel path). The params are core's
 * validated ones for the case's call; without `backward` the case runs forward only.
 */
export interface Launch {
  forward(params: SdpaParams): ForwardOutputs;
  backward?(params: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients;
}

export type Outcome =
  | { readonly ran: 'forward' | 'forward+backward'; readonly verdicts: readonly Verdict[] }
  | { readonly ran: 'declined'; readonly reasons: readonly string[] };

/** Why the backend declines this call (empty when it runs it), from core's explain. */
function declineReasons(spec: CaseSpec, backend: string, inputs: CaseInputs, requiresGrad: boolean): string[] {
  const t = inputs.test;
  const report = explainCall(spec, t, callOptions(spec, t, inputs, backend, requiresGrad));
  const c = report.candidates.find((x) => x.backend === backend);
  if (!c)
    throw new Error(
      `'${backend}' is not a candidate on ${report.device}: is its package imported and its deviceType right?`,
    );
  if (!c.available) return [`unavailable: ${c.unavailableReason ?? '(no reason given)'}`];
  for (const r of c.reasons) {
    if (!r.rule || !r.message) throw new Error(`'${backend}' declined with an empty reason: ${JSON.stringify(r)}`);
  }
  return c.reasons.map((r) => `${r.rule}: ${r.message}`);
}

function assertProperDecline(spec: CaseSpec, backend: string, inputs: CaseInputs, reasons: readonly string[]): void {
  if (reasons.length === 0) throw new Error(`'${backend}' declined without a reason`);
  try {
    forwardCall(spec, inputs.test, callOptions(spec, inputs.test, inputs, backend, false));
  } catch (e) {
    if (e instanceof NoBackendError || (e as { code?: string }).code === 'ATTN_NO_BACKEND') return;
    throw new Error(
      `'${backend}' declines this case (${reasons.join('; ')}) but calling it threw something else than NoBackendError`,
      { cause: e },
    );
  }
  throw new Error(`explain says '${backend}' declines this case (${reasons.join('; ')}), yet the call ran`);
}

/** Bytes the backend's version of a reference output takes (the reference's are float64). */
function bytesAs(t: Tensor, dtype: FloatDType): number {
  return t.numel * DTYPE_BYTES[dtype];
}

function host(t: Tensor): Float64Array {
  return t.toFloat64Array();
}

function disposeAll(...ts: (Tensor | undefined | null)[]): void {
  for (const t of ts) t?.dispose();
}

/**
 * Whether a zero attention weight may meet a non-finite value: v holds NaN or +-Inf (after rounding
 * to the dtype) and some weight can be exactly 0 (masks, causal, window, dropout, or logits so
 * extreme that exp underflows). A tiled kernel computes 0 * Inf = NaN (0 * NaN too) for keys of a
 * tile the row does not see, where the reference never visits them; the forward may then carry
 * extra NaN (judge's extraNaN). Without zero weights the output must match the reference exactly.
 */
function zeroWeightMeetsInfiniteValue(spec: CaseSpec, inputs: CaseInputs): boolean {
  if (inputs.values.v.every((x) => Number.isFinite(x))) return false;
  return Boolean(spec.mask || spec.causal || spec.window || spec.dropoutP || extremeLogits(spec));
}

/**
 * A value of magnitude 1e4 or more planted in v: the backward's delta = rowsum(dO * O) then cancels
 * against dP = dO . v at that magnitude (FlashAttention's form), and float32 leaves errors of
 * 1e4 * 2^-24 relative and more where the float64 reference gets 0. Only the NaN/Inf pattern of the
 * gradients is checked then.
 */
function extremeValues(spec: CaseSpec): boolean {
  return (spec.poison ?? []).some((p) => p.tensor === 'v' && Number.isFinite(p.value) && Math.abs(p.value) >= 1e4);
}

/**
 * The scale or softcap overflows float32, the precision the naive implementation computes low
 * dtypes in: it then gives Inf/NaN where cpu-math (float64) and a backend that computes such calls
 * in float64 (cuda-math) give numbers, so it is no independent check (judge's `poisoned`), and only
 * the reference's NaN/Inf pattern is required.
 */
function scalarsBeyondNaive(spec: CaseSpec): boolean {
  if (spec.dtype === 'float64') return false;
  return !Number.isFinite(Math.fround(spec.scale ?? 1)) || !Number.isFinite(Math.fround(spec.softcap ?? 0));
}

/** A value of magnitude 1e4 or more (or NaN / Inf) planted in q, k or the mask: logits of that size. */
function extremeLogits(spec: CaseSpec): boolean {
  return (spec.poison ?? []).some((p) => p.tensor !== 'v' && !(Math.abs(p.value) < 1e4));
}

/**
 * Runs one case on `backend` (null: whichever backend core selects) and cpu-math on the same inputs,
 * and applies the accuracy rule to every output: out and logsumexp, and the gradients when
 * `backward` (requiresGrad is passed accordingly). Returns the backend that ran and the verdicts.
 */
export function compareWithReference(
  spec: CaseSpec,
  inputs: CaseInputs,
  device: Device,
  backend: string | null,
  backward: boolean,
  launch?: Launch,
): { readonly backend: string; readonly verdicts: Verdict[] } {
  const t = inputs.test;
  const ref = inputs.ref;
  const refFwd = forwardCall(spec, ref, callOptions(spec, ref, inputs, REFERENCE, backward));
  poisonAllocator(device, [bytesAs(refFwd.out, spec.dtype), bytesAs(refFwd.logsumexp, 'float32')]);
  // Forward-only runs write into a given out filled with NaN (the out option; an element the backend
  // never writes stays NaN, on the CPU too), where the backend takes out at all.
  const out =
    !backward && !launch && takesOut(backend) ? full(refFwd.out.shape, NaN, { dtype: spec.dtype, device }) : null;
  const opts = callOptions(spec, t, inputs, backend, backward);
  const launched = launch ? launchedCall(spec, t, opts, backend, launch) : null;
  const fwd: ForwardResult = launched ? launched.fwd : forwardCall(spec, t, out ? { ...opts, out } : opts);
  if (backend !== null && fwd.backend !== backend) throw new Error(`asked for '${backend}', core ran '${fwd.backend}'`);
  if (out && fwd.out !== out) throw new Error(`'${fwd.backend}' returned another tensor than the given out`);
  const backwardOf = (): Gradients => (launched ? launched.backward(t.gradOut) : sdpaBackward(t.gradOut, fwd));
  const dropout = spec.dropoutP ? { seed: inputs.dropoutSeed, offset: inputs.dropoutOffset } : null;
  const naive = naiveAttention(spec, inputs.values, dropout, backward);
  // Poisoned inputs: the same NaN/Inf pattern as the reference, exactly in the forward; the
  // gradients may carry extra NaN (judge's extraNaN says why) but never lose one.
  const planted = (spec.poison?.length ?? 0) > 0;
  const beyond = scalarsBeyondNaive(spec);
  const poisoned = planted || beyond;
  const slack = slackOf(fwd.backend, spec.dtype);
  const fwdRule = { poisoned, extraNaN: zeroWeightMeetsInfiniteValue(spec, inputs), patternOnly: beyond, slack };
  const bwdRule = {
    poisoned,
    extraNaN: planted,
    patternOnly: beyond || extremeLogits(spec) || extremeValues(spec),
    slack,
  };
  const verdicts = [
    judge('out', spec.dtype, host(fwd.out), host(refFwd.out), naive.out, fwdRule),
    judge('logsumexp', spec.dtype, host(fwd.logsumexp), host(refFwd.logsumexp), naive.lse, fwdRule),
  ];
  if (backward) {
    const refGrads = sdpaBackward(ref.gradOut, refFwd);
    poisonAllocator(
      device,
      [refGrads.dq, refGrads.dk, refGrads.dv, refGrads.dbias].flatMap((g) => (g ? [bytesAs(g, spec.dtype)] : [])),
    );
    const grads: Gradients = backwardOf();
    // The gradients' bound allows for FlashAttention's form of the backward (naive.ts, GradientAllowance).
    const allow = naive.allowance!;
    verdicts.push(
      judge('dq', spec.dtype, host(grads.dq), host(refGrads.dq), naive.dq, { ...bwdRule, allowance: allow.dq }),
      judge('dk', spec.dtype, host(grads.dk), host(refGrads.dk), naive.dk, { ...bwdRule, allowance: allow.dk }),
      judge('dv', spec.dtype, host(grads.dv), host(refGrads.dv), naive.dv, { ...bwdRule, allowance: allow.dv }),
    );
    if (naive.dbias) {
      if (!grads.dbias || !refGrads.dbias) throw new Error('an additive mask was given but no dbias came back');
      verdicts.push(
        judge('dbias', spec.dtype, host(grads.dbias), host(refGrads.dbias), naive.dbias, {
          ...bwdRule,
          allowance: allow.dbias!,
        }),
      );
    }
    if (spec.deterministic) verdicts.push(bitwiseAgain(grads, backwardOf()));
    disposeAll(grads.dq, grads.dk, grads.dv, grads.dbias);
  }
  disposeAll(fwd.out, fwd.logsumexp);
  return { backend: fwd.backend, verdicts };
}

/**
 * A deterministic backward run again on the same inputs gives dq, dk and dv bit for bit (dbias is
 * left out: a broadcast mask's dbias may be summed with atomics, which the mode does not promise).
 */
function bitwiseAgain(first: Gradients, again: Gradients): Verdict {
  const differ = (['dq', 'dk', 'dv'] as const).filter((n) => {
    const a = host(first[n]);
    const b = host(again[n]);
    return a.length !== b.length || a.some((x, i) => !Object.is(x, b[i]));
  });
  disposeAll(again.dq, again.dk, again.dv, again.dbias);
  return differ.length === 0
    ? { ok: true, message: 'deterministic: dq, dk, dv bitwise reproducible' }
    : {
        ok: false,
        message: `deterministic: ${differ.join(', ')} differ between two backward calls on the same inputs`,
      };
}

/** The case's call through `launch` (the backend's own entry points) on core's validated params. */
function launchedCall(
  spec: CaseSpec,
  t: CaseInputs['test'],
  opts: ReturnType<typeof callOptions>,
  backend: string | null,
  launch: Launch,
) {
  if (backend === null) throw new Error('a launch needs the backend it launches on');
  const { backends: _restriction, ...call } = opts;
  const params = spec.varlen
    ? normalizeVarlenParams(t.q, t.k, t.v, call as VarlenOptions)
    : normalizeParams(t.q, t.k, t.v, call as SdpaOptions);
  const saved = launch.forward(params);
  const fwd: ForwardResult = { out: saved.out, logsumexp: saved.logsumexp, rng: { seed: 0n, offset: 0 }, backend };
  return {
    fwd,
    backward: (gradOut: Tensor): Gradients => {
      if (!launch.backward) throw new Error(`${spec.name}: the launch has no backward`);
      return launch.backward(params, saved, gradOut);
    },
  };
}

/** Whether the backend writes into a given out (backends that cannot decline it by core's noOutTensor). */
function takesOut(backend: string | null): boolean {
  const impl = backend === null ? undefined : getBackend(backend);
  return impl !== undefined && !impl.rules.includes(noOutTensor);
}

/** Frees a case's device inputs. */
export function disposeInputs(inputs: CaseInputs): void {
  const t = inputs.test;
  disposeAll(t.q, t.k, t.v, t.gradOut, t.mask, t.slopes, t.cuSeqlensQ, t.cuSeqlensK, t.sequsedK, t.blockTable);
}

export function runCase(backend: string, spec: CaseSpec, seed: bigint, device: Device, launch?: Launch): Outcome {
  const impl = getBackend(backend);
  if (!impl) throw new Error(`backend '${backend}' is not registered: import its package before describeConformance()`);
  const inputs = makeInputs(spec, seed, device);
  try {
    // Paged K/V and float8_e4m3 inputs are inference only: core rejects requiresGrad with them.
    let backward =
      typeof impl.backward === 'function' && !spec.paged && !spec.float8 && (!launch || launch.backward !== undefined);
    let reasons = declineReasons(spec, backend, inputs, backward);
    if (reasons.length > 0 && backward && declineReasons(spec, backend, inputs, false).length === 0) {
      // Declined with requiresGrad only: the forward alone is supported, so it runs alone.
      backward = false;
      reasons = [];
    }
    if (reasons.length > 0) {
      assertProperDecline(spec, backend, inputs, reasons);
      return { ran: 'declined', reasons };
    }
    const { verdicts } = compareWithReference(spec, inputs, device, backend, backward, launch);
    return { ran: backward ? 'forward+backward' : 'forward', verdicts };
  } finally {
    disposeInputs(inputs);
  }
}
