// The run-time environment variables attn reads, declared once, each with its one parser (as tfjs's
// flags). Build-time variables (ATTN_CUDA_ARCHS, ATTN_ROCM_ARCHS, ATTN_BUILD_JOBS, ATTN_NATIVE_DEBUG)
// belong to @attn/native's build; test seeds to the test suites. Kernel choice is not an environment
// variable: it is the `kernel` call option (SdpaOptions.kernel).
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
