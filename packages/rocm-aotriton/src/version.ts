// AOTriton versions this binding knows, and what changes between them: the v3 params struct
// versions (the ABI guard), the window_right bug, head-dim limits, the deterministic option.
// Source: AOTriton's release headers (checked in README.md, scripts/check-headers.sh) and PyTorch's
// ROCm selection code (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp).

export interface AotritonVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

export interface ParamsVersions {
  /** attn_fwd_params::kVersion */
  readonly fwd: number;
  /** attn_bwd_params::kVersion */
  readonly bwd: number;
}

/**
 * The oldest AOTriton the shim compiles against: 0.10b, the first with the v3 attn_fwd/attn_bwd
 * params structs (PyTorch 2.8's pin). 0.10 passes D as a plain tensor and has no DQ_ACC; 0.11 made
 * both LazyTensors; the shim handles both (checked with scripts/check-headers.sh).
 */
export const MIN_VERSION: AotritonVersion = { major: 0, minor: 10, patch: 0 };
/** The newest version whose facts (arch lists, params versions) this file records. */
export const LATEST_KNOWN: AotritonVersion = { major: 0, minor: 14, patch: 0 };

export function versionString(v: AotritonVersion): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

export function compareVersions(a: AotritonVersion, b: AotritonVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

const at = (minor: number, patch = 0): AotritonVersion => ({ major: 0, minor, patch });

/** The params-struct versions AOTriton `v` expects: 0.10 fwd 1/bwd 1, 0.11 fwd 1/bwd 3, 0.12+ fwd 3/bwd 6. */
export function expectedParamsVersions(v: AotritonVersion): ParamsVersions | null {
  if (compareVersions(v, at(10)) < 0) return null;
  if (compareVersions(v, at(11)) < 0) return { fwd: 1, bwd: 1 };
  if (compareVersions(v, at(12)) < 0) return { fwd: 1, bwd: 3 };
  return { fwd: 3, bwd: 6 };
}

/**
 * The version guard: the shim was compiled against headers whose structs carry `compiled`; that must
 * be a pair this binding knows for that AOTriton version. Returns what to change, or null.
 */
export function checkParamsVersions(v: AotritonVersion, compiled: ParamsVersions): string | null {
  if (compareVersions(v, MIN_VERSION) < 0) {
    return `AOTriton ${versionString(v)} is too old: this binding needs ${versionString(MIN_VERSION)} or newer (the v3 flash API, attn_fwd_params/attn_bwd_params); install a newer AOTriton and rebuild`;
  }
  const expected = expectedParamsVersions(v);
  if (expected === null || expected.fwd !== compiled.fwd || expected.bwd !== compiled.bwd) {
    const want = expected === null ? 'unknown' : `fwd ${expected.fwd}, bwd ${expected.bwd}`;
    return (
      `AOTriton ${versionString(v)} headers declare attn_fwd_params v${compiled.fwd} and attn_bwd_params v${compiled.bwd}, ` +
      `but this binding knows ${want} for that version; use an AOTriton release this binding knows (0.10 to ${LATEST_KNOWN.major}.${LATEST_KNOWN.minor}) or update the binding`
    );
  }
  return null;
}

/**
 * 0.10b, 0.11b and 0.11.1b copy window_left into the forward kernel's Window_right, so the caller's
 * window_right is ignored in the forward pass. Fixed in 0.11.2b ("Fix window size in v3").
 */
export function hasWindowRightBug(v: AotritonVersion): boolean {
  return compareVersions(v, at(10)) >= 0 && compareVersions(v, at(11, 2)) < 0;
}

/** PyTorch's aotriton_max_hdim(): 512 from 0.9, but 256 on gfx11* with AOTriton 0.11. */
export function maxHeadDim(v: AotritonVersion, arch: string): number {
  if (v.major === 0 && v.minor === 11 && arch.startsWith('gfx11')) return 256;
  return 512;
}

/** attn_options.deterministic exists from 0.12. */
export function hasDeterministicOption(v: AotritonVersion): boolean {
  return compareVersions(v, at(12)) >= 0;
}

/**
 * The memory-efficient head-dim rule changed with 0.12: before, q/k/v share a head dim that is a
 * multiple of 8 and at most 256; from 0.12, alignment 8 (fp16/bf16) or 4 (fp32) and at most max_hdim.
 */
export function efficientUsesAlignmentRule(v: AotritonVersion): boolean {
  return compareVersions(v, at(12)) >= 0;
}
