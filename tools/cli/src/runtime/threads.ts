// CPU threads for a command: --threads, else ATTN_NUM_THREADS (what cpu-flash reads), else every core.
// The same number goes to cpu-flash (through ATTN_NUM_THREADS) and to torch (--compare torch).
import os from 'node:os';
import { AttnInputError, envNumThreads } from '@attn/core';
import { CliUsageError } from '../errors.js';

export function cpuThreads(
  flag: number | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): number {
  if (flag !== undefined) return flag;
  try {
    return envNumThreads(env) ?? os.availableParallelism();
  } catch (e) {
    // core's one parser of the variable; here a usage error, with the flag that overrides it.
    if (e instanceof AttnInputError) throw new CliUsageError(`${e.message} Or pass --threads N.`);
    throw e;
  }
}

/** Runs `fn` with ATTN_NUM_THREADS set to `threads` (restored afterwards) when --threads was given. */
export async function withCpuThreads<T>(flag: number | undefined, fn: () => Promise<T>): Promise<T> {
  if (flag === undefined) return fn();
  const before = process.env.ATTN_NUM_THREADS;
  process.env.ATTN_NUM_THREADS = String(flag);
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.ATTN_NUM_THREADS;
    else process.env.ATTN_NUM_THREADS = before;
  }
}
