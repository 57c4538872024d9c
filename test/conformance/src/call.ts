// One case's call: its options (dense or varlen) and the entry points that take them, so that the
// backend under test and the reference are called the same way.
import { explain, explainVarlen, sdpaForward, sdpaVarlen } from '@attn/core';
import type { ForwardResult, SdpaOptions, SelectionReport, VarlenOptions } from '@attn/core';
import type { CaseSpec } from './cases.js';
import type { CallTensors, CaseInputs } from './inputs.js';

export type CallOptions = SdpaOptions | VarlenOptions;

/** backend: the one backend to run (a `backends` restriction), or null for core's own selection. */
export function callOptions(
  spec: CaseSpec,
  t: CallTensors,
  inputs: CaseInputs,
  backend: string | null,
  requiresGrad: boolean,
): CallOptions {
  const common: SdpaOptions = {
    scale: spec.scale,
    isCausal: spec.causal ?? false,
    alignment: spec.alignment ?? 'upperLeft',
    enableGqa: spec.enableGqa ?? false,
    window: spec.window ?? null,
    alibiSlopes: t.slopes,
    sequsedK: t.sequsedK,
    softcap: spec.softcap ?? 0,
    dropoutP: spec.dropoutP ?? 0,
    dropoutSeed: inputs.dropoutSeed,
    dropoutOffset: inputs.dropoutOffset,
    backends: backend === null ? undefined : [backend],
    requiresGrad,
    deterministic: spec.deterministic ?? false,
    ...(inputs.descale ? { descale: inputs.descale } : {}),
  };
  if (!spec.varlen) return { ...common, attnMask: t.mask };
  const { attnMask: _none, ...rest } = common;
  return {
    ...rest,
    cuSeqlensQ: t.cuSeqlensQ!,
    cuSeqlensK: t.cuSeqlensK!,
    maxSeqlenQ: spec.seqQ,
    maxSeqlenK: spec.seqK,
    blockTable: t.blockTable,
  };
}

export function explainCall(spec: CaseSpec, t: CallTensors, opts: CallOptions): SelectionReport {
  return spec.varlen ? explainVarlen(t.q, t.k, t.v, opts as VarlenOptions) : explain(t.q, t.k, t.v, opts);
}

export function forwardCall(spec: CaseSpec, t: CallTensors, opts: CallOptions): ForwardResult {
  return spec.varlen ? sdpaVarlen(t.q, t.k, t.v, opts as VarlenOptions) : sdpaForward(t.q, t.k, t.v, opts);
}
