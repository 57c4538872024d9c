// Which library runs flash and memory-efficient attention on ROCm: AOTriton (the default) or CK.
// As PyTorch's at::ROCmFABackend: the preference is set by preferredRocmFaLibrary() (as
// torch.backends.cuda.preferred_rocm_fa_library; attn reads no environment switch for it), 'default'
// means AOTriton, and a CK preference that can no longer be honoured when a call resolves it (CK
// unregistered or not loadable, or a visible GPU outside CK's arch list) falls back to AOTriton with a
// one-time warning. The setter throws instead of accepting a CK preference it cannot honour.
// State lives on globalThis so two copies of this package agree.
import { AttnError, AttnInputError, getDeviceRuntime, type Availability } from '@attn/core';
import { warnOnce } from './warn-once.js';

export type RocmFaLibrary = 'aotriton' | 'ck';
export type RocmFaPreference = 'default' | RocmFaLibrary;
const PREFERENCES: readonly RocmFaPreference[] = ['default', 'aotriton', 'ck'];

/** What a library package registers so the preference can be checked (CK: hasCKSDPA + ckSupported). */
export interface RocmFaLibraryProbe {
  readonly library: RocmFaLibrary;
  /** Whether the library's addon loads; never throws. */
  availability(): Availability;
  /** The gfx targets the library has kernels for. */
  readonly archs: readonly string[];
}

export type VisibleArchs =
  { readonly ok: true; readonly archs: readonly string[] } | { readonly ok: false; readonly reason: string };

/** What resolution reads; injectable for tests. */
export interface FaLibraryDeps {
  probe(library: RocmFaLibrary): RocmFaLibraryProbe | undefined;
  visibleArchs(): VisibleArchs;
}

export interface RocmFaChoice {
  /** What was asked for, and by whom. */
  readonly requested: RocmFaPreference;
  readonly source: 'api' | 'default';
  /** The library that runs. */
  readonly effective: RocmFaLibrary;
  /** Set when CK was requested but AOTriton runs: why. */
  readonly fallback: string | null;
}

/** Thrown by preferredRocmFaLibrary('ck') when CK cannot be used. */
export class RocmFaLibraryError extends AttnError {
  constructor(message: string) {
    super('ATTN_ROCM_FA_LIBRARY', message);
  }
}

interface FaState {
  api: RocmFaPreference | null;
  readonly probes: Map<RocmFaLibrary, RocmFaLibraryProbe>;
}

const KEY = Symbol.for('@attn/rocm/fa-library');
type GlobalWithFa = typeof globalThis & { [KEY]?: FaState };

function state(): FaState {
  const g = globalThis as GlobalWithFa;
  g[KEY] ??= { api: null, probes: new Map() };
  return g[KEY];
}

/** Called by @attn/rocm-ck (and @attn/rocm-aotriton) on import. */
export function registerRocmFaLibrary(probe: RocmFaLibraryProbe): void {
  state().probes.set(probe.library, probe);
}

export function unregisterRocmFaLibrary(library: RocmFaLibrary): void {
  state().probes.delete(library);
}

/** The gfx targets of every visible AMD GPU, from the 'rocm' device runtime. */
export function visibleRocmArchs(): VisibleArchs {
  const rt = getDeviceRuntime('rocm');
  if (!rt) return { ok: false, reason: "no 'rocm' device runtime is registered (import '@attn/rocm')" };
  const a = rt.availability();
  if (!a.ok) return { ok: false, reason: `the ROCm runtime is unavailable: ${a.reason}` };
  const archs: string[] = [];
  for (let i = 0; i < rt.deviceCount(); i++) archs.push(rt.properties(i).arch);
  return { ok: true, archs };
}

export function defaultFaLibraryDeps(): FaLibraryDeps {
  return { probe: (lib) => state().probes.get(lib), visibleArchs: visibleRocmArchs };
}

/** Why CK cannot be used, or [] when it can (PyTorch: hasCKSDPA() && ckSupported()). */
export function ckProblems(deps: FaLibraryDeps): string[] {
  const probe = deps.probe('ck');
  if (!probe) return ["@attn/rocm-ck is not loaded (import '@attn/rocm-ck' before the first call)"];
  const problems: string[] = [];
  const a = probe.availability();
  if (!a.ok) problems.push(`CK is unavailable: ${a.reason}`);
  const gpus = deps.visibleArchs();
  if (!gpus.ok) {
    problems.push(`cannot list the visible GPUs: ${gpus.reason}`);
  } else if (gpus.archs.length === 0) {
    problems.push('no AMD GPU is visible');
  } else {
    const unsupported = [...new Set(gpus.archs.filter((arch) => !probe.archs.includes(arch)))];
    if (unsupported.length > 0) {
      problems.push(
        `CK has kernels for ${probe.archs.join(', ')} only; visible GPU ${unsupported.join(', ')} is not among them`,
      );
    }
  }
  return problems;
}

/** Resolves the preference to the library that runs (pure: no warning). */
export function resolveRocmFaLibrary(deps: FaLibraryDeps = defaultFaLibraryDeps()): RocmFaChoice {
  const api = state().api;
  const requested: RocmFaPreference = api ?? 'default';
  const source = api !== null ? 'api' : 'default';
  if (requested !== 'ck') return { requested, source, effective: 'aotriton', fallback: null };
  const problems = ckProblems(deps);
  return {
    requested,
    source,
    effective: problems.length === 0 ? 'ck' : 'aotriton',
    fallback: problems.length === 0 ? null : problems.join('; '),
  };
}

/** How the choice was made, in words: "preferredRocmFaLibrary('ck')" or "the default". */
export function describeSource(choice: RocmFaChoice): string {
  if (choice.source === 'api') return `preferredRocmFaLibrary('${choice.requested}')`;
  return 'the default';
}

/** Prints the fallback warning once per process; returns the choice. */
export function resolveAndWarn(deps: FaLibraryDeps = defaultFaLibraryDeps()): RocmFaChoice {
  const choice = resolveRocmFaLibrary(deps);
  if (choice.fallback !== null) {
    warnOnce(
      'ck-fallback',
      'ATTN_ROCM_CK_FALLBACK',
      `attn: CK was preferred for ROCm attention (${describeSource(choice)}) but cannot be used: ${choice.fallback}. Using AOTriton instead.`,
    );
  }
  return choice;
}

/**
 * As torch.backends.cuda.preferred_rocm_fa_library: without an argument, returns the library that
 * runs (warning once if a CK preference falls back to AOTriton). With 'default', 'aotriton' or 'ck',
 * sets the preference and returns the library that runs;
 * 'ck' throws RocmFaLibraryError when CK cannot be used, and leaves the preference unchanged.
 */
export function preferredRocmFaLibrary(
  library?: RocmFaPreference,
  deps: FaLibraryDeps = defaultFaLibraryDeps(),
): RocmFaLibrary {
  if (library === undefined) return resolveAndWarn(deps).effective;
  if (!(PREFERENCES as readonly unknown[]).includes(library)) {
    throw new AttnInputError(
      'ATTN_ROCM_FA_LIBRARY',
      `Unknown ROCm flash-attention library ${JSON.stringify(library)}: choose from 'default', 'aotriton', 'ck'.`,
    );
  }
  if (library === 'ck') {
    const problems = ckProblems(deps);
    if (problems.length > 0) {
      throw new RocmFaLibraryError(
        `Cannot prefer CK for ROCm attention: ${problems.join('; ')}. Keep AOTriton (preferredRocmFaLibrary('default')) or fix the above.`,
      );
    }
  }
  state().api = library;
  return resolveRocmFaLibrary(deps).effective;
}

/** Forgets the preference, back to the default (AOTriton): for tests and long-lived processes. */
export function resetRocmFaPreference(): void {
  state().api = null;
}

/** As torch.backends.cuda.is_ck_sdpa_available(): @attn/rocm-ck is loaded and its addon loads. */
export function isCkSdpaAvailable(deps: FaLibraryDeps = defaultFaLibraryDeps()): boolean {
  return deps.probe('ck')?.availability().ok === true;
}
