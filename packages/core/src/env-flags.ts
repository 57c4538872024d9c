// The environment variables attn reads, declared once, each with its one parser (as tfjs's flags): the one
// run-time variable (the CPU thread count), and the test suites' variables (seeds, budgets, the GPU-host
// gates), which no call reads. Build-time variables (ATTN_CUDA_ARCHS, ATTN_ROCM_ARCHS, ATTN_BUILD_JOBS,
// ATTN_NATIVE_DEBUG) belong to @attn/native's build. Kernel choice is not an environment variable: it is the
// `kernel` call option (SdpaOptions.kernel).
import { AttnInputError } from './errors.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The most CPU threads a call may be given. */
export const MAX_NUM_THREADS = 1024;

/** The variables read at run time, with what each one sets (for `attn doctor` and the docs). */
export const RUNTIME_ENV_FLAGS = Object.freeze({
  ATTN_NUM_THREADS: `CPU threads per call of the CPU backends (an integer in [1, ${MAX_NUM_THREADS}]); default: every core this process may use`,
} as const);

export type RuntimeEnvFlag = keyof typeof RUNTIME_ENV_FLAGS;

function processEnv(): Env {
  return (globalThis as { process?: { env?: Env } }).process?.env ?? {};
}

/**
 * ATTN_NUM_THREADS: null when unset or blank (the caller's default applies), else its integer value.
 * Throws AttnInputError (ATTN_NUM_THREADS) for anything but an integer in [1, MAX_NUM_THREADS].
 */
export function envNumThreads(env: Env = processEnv()): number | null {
  const raw = env.ATTN_NUM_THREADS;
  if (raw === undefined || raw.trim() === '') return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_NUM_THREADS) {
    throw new AttnInputError(
      'ATTN_NUM_THREADS',
      `ATTN_NUM_THREADS must be an integer in [1, ${MAX_NUM_THREADS}], got '${raw}'; unset it for every core.`,
    );
  }
  return n;
}

/**
 * The variables the test suites read (@attn/conformance and the packages' GPU tests), never a call: what
 * each one sets. A suite reads them only through the parsers below.
 */
export const TEST_ENV_FLAGS = Object.freeze({
  ATTN_REQUIRE_GPU: "'1' on a GPU host: a CUDA suite that cannot run there fails instead of skipping",
  ATTN_REQUIRE_ROCM: "'1' on an AMD GPU host: a ROCm suite that cannot run there fails instead of skipping",
  ATTN_CONFORMANCE_SEED: 'base seed of the conformance cases (an integer); default: a fresh one, printed on failure',
  ATTN_FUZZ_SEED: 'seed of the fuzz cases (an integer); default 25, so CI runs the same cases every time',
  ATTN_FUZZ_RUNS: 'valid fuzz cases per suite (an integer); default 300',
  ATTN_FUZZ_SANITIZER:
    "run the fuzz suite's child processes under compute-sanitizer with this tool (memcheck, racecheck, initcheck or synccheck)",
  ATTN_SOAK_CALLS: 'calls per soak suite (an integer); default 10,000',
} as const);

export type TestEnvFlag = keyof typeof TEST_ENV_FLAGS;

/** compute-sanitizer's tools, the values of ATTN_FUZZ_SANITIZER. */
export const SANITIZER_TOOLS = Object.freeze(['memcheck', 'racecheck', 'initcheck', 'synccheck'] as const);
export type SanitizerTool = (typeof SANITIZER_TOOLS)[number];

function unset(raw: string | undefined): raw is undefined {
  return raw === undefined || raw.trim() === '';
}

/** A gate (ATTN_REQUIRE_GPU, ATTN_REQUIRE_ROCM): true for '1', false when unset, blank or '0'; else a typed error. */
export function envTestGate(name: 'ATTN_REQUIRE_GPU' | 'ATTN_REQUIRE_ROCM', env: Env = processEnv()): boolean {
  const raw = env[name];
  if (unset(raw) || raw.trim() === '0') return false;
  if (raw.trim() === '1') return true;
  throw new AttnInputError(name, `${name} must be 1 (or 0, or unset), got '${raw}'.`);
}

/** A count (ATTN_FUZZ_RUNS, ATTN_SOAK_CALLS) or a fuzz seed: null when unset or blank, else a non-negative integer. */
export function envTestInt(
  name: 'ATTN_FUZZ_RUNS' | 'ATTN_SOAK_CALLS' | 'ATTN_FUZZ_SEED',
  env: Env = processEnv(),
): number | null {
  const raw = env[name];
  if (unset(raw)) return null;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new AttnInputError(name, `${name} must be a non-negative integer, got '${raw}'.`);
  }
  return n;
}

/** ATTN_CONFORMANCE_SEED: null when unset or blank, else the seed as a 64-bit unsigned integer. */
export function envTestSeed(name: 'ATTN_CONFORMANCE_SEED', env: Env = processEnv()): bigint | null {
  const raw = env[name];
  if (unset(raw)) return null;
  let seed: bigint | null = null;
  try {
    seed = BigInt(raw.trim());
  } catch {
    seed = null;
  }
  if (seed === null || seed < 0n || seed >= 1n << 64n) {
    throw new AttnInputError(name, `${name} must be an integer in [0, 2^64), got '${raw}'.`);
  }
  return seed;
}

/** ATTN_FUZZ_SANITIZER: null when unset or blank, else one of compute-sanitizer's tools. */
export function envTestSanitizer(env: Env = processEnv()): SanitizerTool | null {
  const raw = env.ATTN_FUZZ_SANITIZER;
  if (unset(raw)) return null;
  const tool = raw.trim();
  if (!(SANITIZER_TOOLS as readonly string[]).includes(tool)) {
    throw new AttnInputError(
      'ATTN_FUZZ_SANITIZER',
      `ATTN_FUZZ_SANITIZER must be one of ${SANITIZER_TOOLS.join(', ')}, got '${raw}'.`,
    );
  }
  return tool as SanitizerTool;
}
