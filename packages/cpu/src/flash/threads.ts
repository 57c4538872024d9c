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

/**
 * 2^23 FLOPs of work (60-170 us of fp32 work on one core, less on AMX tiles) per thread before another one pays
 * off. The pool's threads poll between calls (native thread_pool.cpp), so a helper starts within microseconds;
 * at 2^25 a causal S 512 call (B 2, H 2, D 128) ran on 8 of 16 cores and behind torch.
 */
const FLOPS_PER_THREAD = 2 ** 23;

/** Threads for a call of `flops`, at most `limit`. */
export function threadsFor(flops: number, limit: number): number {
  return Math.max(1, Math.min(limit, Math.ceil(flops / FLOPS_PER_THREAD)));
}
