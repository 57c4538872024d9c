// How many threads a call may use: the backend's option, else ATTN_NUM_THREADS, else every CPU
// this process may run on. Small calls use fewer: waking threads costs more than they would save.
import { availableParallelism } from 'node:os';
import { AttnInputError, envNumThreads, MAX_NUM_THREADS } from '@attn/core';

export const MAX_THREADS = MAX_NUM_THREADS;

/** Threads from the environment (core's envNumThreads: the one parser) or the machine. */
export function defaultThreads(env: NodeJS.ProcessEnv = process.env): number {
  return envNumThreads(env) ?? Math.min(availableParallelism(), MAX_THREADS);
}

export function checkThreads(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > MAX_THREADS) {
    throw new AttnInputError(
      'ATTN_NUM_THREADS',
      `threads must be an integer in [1, ${MAX_THREADS}], got ${String(n)}.`,
    );
  }
  return n;
}

/** About 0.25 ms of single-core work (2^25 FLOPs) per thread before another one pays off. */
const FLOPS_PER_THREAD = 2 ** 25;

/** Threads for a call of `flops`, at most `limit`. */
export function threadsFor(flops: number, limit: number): number {
  return Math.max(1, Math.min(limit, Math.ceil(flops / FLOPS_PER_THREAD)));
}
