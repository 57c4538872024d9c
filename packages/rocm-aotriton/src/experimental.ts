// Whether AOTriton may run on the archs its release calls experimental (isArchExperimentallySupported).
// PyTorch gates them behind TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL; attn takes the switch through this
// API only. Off by default. State lives on globalThis so two copies of this package agree.
import { AttnInputError } from '@attn/core';

interface ExperimentalState {
  on: boolean;
}

const KEY = Symbol.for('@attn/rocm-aotriton/experimental-archs');
type GlobalWithExperimental = typeof globalThis & { [KEY]?: ExperimentalState };

function state(): ExperimentalState {
  const g = globalThis as GlobalWithExperimental;
  g[KEY] ??= { on: false };
  return g[KEY];
}

/**
 * Without an argument, returns whether experimental AOTriton archs are enabled. With true or false,
 * sets it and returns the new setting. The rules read it on every call, so it takes effect at once.
 */
export function enableExperimentalAotritonArchs(on?: boolean): boolean {
  if (on === undefined) return state().on;
  if (typeof on !== 'boolean') {
    throw new AttnInputError(
      'ATTN_TYPE',
      `enableExperimentalAotritonArchs takes true or false (or nothing, to read the setting); got ${typeof on}.`,
    );
  }
  state().on = on;
  return on;
}

/** The call that enables experimental archs, for decline messages. */
export const ENABLE_EXPERIMENTAL_CALL = 'enableExperimentalAotritonArchs(true) from @attn/rocm-aotriton';
