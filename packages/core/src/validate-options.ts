// Checks and defaults for the options shared by sdpa and sdpaVarlen.
import type { Device } from './device.js';
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';
import type { Alignment, DropoutParams, SdpaOptions, SdpaParams } from './params.js';
import { resolveKernel } from './kernel-option.js';
import { dropoutThreshold } from './philox.js';
import { checkBackendNames } from './registry.js';
import { randomSeed, toSeed } from './seed.js';
import type { Tensor } from './tensor.js';
import { checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

/** Every key of SdpaOptions: anything else is a typo, and a typo must not be ignored silently. */
export const SDPA_OPTION_KEYS: ReadonlySet<keyof SdpaOptions> = new Set<keyof SdpaOptions>([
  'attnMask',
  'dropoutP',
  'isCausal',
  'alignment',
  'scale',
  'enableGqa',
  'window',
  'alibiSlopes',
  'softcap',
  'sequsedK',
  'dropoutSeed',
  'dropoutOffset',
  'backends',
  'kernel',
  'descale',
  'requiresGrad',
  'deterministic',
  'out',
  'indexValuesOnDevice',
]);

export interface CommonOptions {
  readonly explicitScale: number | null;
  readonly causal: boolean;
  readonly alignment: Alignment;
  readonly window: SdpaParams['window'];
  readonly softcap: number;
  readonly dropout: DropoutParams | null;
  /** What ForwardResult.rng reports: the dropout seed, or the given seed (0n) when dropout is off. */
  readonly rng: { readonly seed: bigint; readonly offset: number };
  readonly enableGqa: boolean;
  readonly requiresGrad: boolean;
  readonly deterministic: boolean;
  /** Per-call restriction, or null; with a kernel, narrowed to the backends that declare it. */
  readonly backends: readonly string[] | null;
  /** The kernel option, checked against the registered backends' kernels (resolveKernel). */
  readonly kernel: string | null;
  readonly alibiSlopes: Tensor | null;
}

export function checkOptionsObject<T extends object>(
  opts: unknown,
  allowed: ReadonlySet<string>,
  fn: string,
): Partial<T> {
  if (opts === undefined || opts === null) return {};
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    throw new AttnInputError(
      'ATTN_TYPE',
      `${fn}: options must be an object, got ${Array.isArray(opts) ? 'an array' : typeof opts}.`,
    );
  }
  // No allocation when every key is known (the call path); the list only for the error.
  let clean = true;
  for (const k in opts) if (Object.hasOwn(opts, k) && !allowed.has(k)) clean = false;
  const unknown = clean ? [] : Object.keys(opts).filter((k) => !allowed.has(k));
  if (unknown.length > 0) {
    throw new AttnInputError(
      'ATTN_OPTION',
      `${fn}: unknown option ${unknown.join(', ')}; the options are ${[...allowed].join(', ')}.`,
    );
  }
  return opts as Partial<T>;
}

function bool(v: unknown, name: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean')
    throw new AttnInputError('ATTN_OPTION', `${name} must be true or false, got ${describeValue(v)}.`);
  return v;
}

/** dropoutP, dropoutSeed and dropoutOffset; the seed is fresh per call unless given. */
export function checkDropout(opts: Partial<SdpaOptions>): { dropout: DropoutParams | null; rng: CommonOptions['rng'] } {
  const p = opts.dropoutP ?? 0;
  if (typeof p !== 'number' || !(p >= 0 && p < 1)) {
    throw new AttnInputError(
      'ATTN_DROPOUT',
      `dropoutP must be a number in [0, 1), got ${describeValue(p)}; use 0 to turn dropout off.`,
    );
  }
  const offset = opts.dropoutOffset ?? 0;
  if (!Number.isInteger(offset) || offset < 0 || offset > 0xffffffff) {
    throw new AttnInputError(
      'ATTN_DROPOUT',
      `dropoutOffset must be an integer in [0, 2^32), got ${describeValue(offset)}.`,
    );
  }
  const given = opts.dropoutSeed === undefined ? null : toSeed(opts.dropoutSeed, 'dropoutSeed', 'ATTN_DROPOUT');
  if (p === 0) return { dropout: null, rng: { seed: given ?? 0n, offset } };
  const seed = given ?? randomSeed();
  return {
    dropout: { p, seed, offset, threshold: dropoutThreshold(p), keepScale: 1 / (1 - p) },
    rng: { seed, offset },
  };
}

function checkWindow(w: SdpaOptions['window'] | undefined): SdpaParams['window'] {
  if (w === undefined || w === null) return null;
  const ok = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= -1;
  if (!Array.isArray(w) || w.length !== 2 || !ok(w[0]) || !ok(w[1])) {
    throw new AttnInputError(
      'ATTN_WINDOW',
      `window must be [left, right] with integers >= 0, or -1 for an unbounded side; got ${describeValue(w)}.`,
    );
  }
  const left = w[0] === -1 ? null : w[0];
  const right = w[1] === -1 ? null : w[1];
  // [-1, -1] bounds nothing: normalizing it away lets backends without windows take the call.
  return left === null && right === null ? null : { left, right };
}

export function checkCommonOptions(opts: Partial<SdpaOptions>): CommonOptions {
  if (
    opts.scale !== undefined &&
    (typeof opts.scale !== 'number' || !Number.isFinite(opts.scale) || opts.scale === 0)
  ) {
    throw new AttnInputError(
      'ATTN_SCALE',
      `scale must be a finite nonzero number, got ${describeValue(opts.scale)}; leave it out for the default 1/sqrt(headDim).`,
    );
  }
  const alignment = opts.alignment ?? 'upperLeft';
  if (alignment !== 'upperLeft' && alignment !== 'lowerRight') {
    throw new AttnInputError(
      'ATTN_OPTION',
      `alignment must be 'upperLeft' or 'lowerRight', got ${describeValue(alignment)}.`,
    );
  }
  const softcap = opts.softcap ?? 0;
  if (typeof softcap !== 'number' || !Number.isFinite(softcap) || softcap < 0) {
    throw new AttnInputError(
      'ATTN_SOFTCAP',
      `softcap must be a finite number >= 0 (0 = off), got ${describeValue(softcap)}.`,
    );
  }
  const { dropout, rng } = checkDropout(opts);
  const alibi = opts.alibiSlopes ?? null;
  const { kernel, backends } = resolveKernel(
    opts.kernel,
    opts.backends === undefined ? null : checkBackendNames(opts.backends, 'backends'),
  );
  return {
    explicitScale: opts.scale ?? null,
    causal: bool(opts.isCausal, 'isCausal'),
    alignment,
    window: checkWindow(opts.window),
    softcap,
    dropout,
    rng,
    enableGqa: bool(opts.enableGqa, 'enableGqa'),
    requiresGrad: bool(opts.requiresGrad, 'requiresGrad'),
    deterministic: bool(opts.deterministic, 'deterministic'),
    backends,
    kernel,
    alibiSlopes: alibi === null ? null : checkTensorArg(alibi, 'alibiSlopes'),
  };
}

/** ALiBi slopes: float32, [Hq] or [B, Hq], on the query's device. */
export function checkAlibi(slopes: Tensor, batch: number, headsQ: number, device: Device): void {
  const s = slopes.shape;
  const shapeOk = (s.length === 1 && s[0] === headsQ) || (s.length === 2 && s[0] === batch && s[1] === headsQ);
  if (slopes.dtype !== 'float32' || !shapeOk) {
    throw new AttnInputError(
      'ATTN_ALIBI',
      `alibiSlopes must be float32 with shape [${headsQ}] or [${batch}, ${headsQ}] ([Hq] or [B, Hq]); got ${slopes.dtype} ${shapeStr(slopes)}.`,
    );
  }
  checkSameDevice(slopes, 'alibiSlopes', device);
}

/** 1/sqrt(D) unless given. */
export function resolveScale(explicit: number | null, headDim: number): number {
  return explicit ?? 1 / Math.sqrt(headDim);
}

/** The dropout counter holds b * Hq + h in one uint32 word. */
export function checkCounterRange(batch: number, headsQ: number): void {
  if (batch * headsQ > 0xffffffff) {
    throw new AttnInputError(
      'ATTN_SIZE',
      `batch * query heads = ${batch * headsQ} exceeds 2^32 - 1, which the dropout counter can address; split the batch.`,
    );
  }
}
