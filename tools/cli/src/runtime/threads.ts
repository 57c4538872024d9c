// CPU threads for a command: --threads, else ATTN_NUM_THREADS (what cpu-flash reads), else every core.
// The same number goes to cpu-flash (through ATTN_NUM_THREADS) and to torch (--compare torch).
import os from 'node:os';
import { CliUsageError } from '../errors.js';

export function cpuThreads(flag: number | undefined, env: Readonly<Record<string, string | undefined>> = process.env): number {
  if (flag !== undefined) return flag;
  const raw = env.ATTN_NUM_THREADS;
  if (raw === undefined || raw.trim() === '') return os.availableParallelism();
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new CliUsageError(`ATTN_NUM_THREADS must be a positive integer, got '${raw}'; unset it or pass --threads N.`);
  return n;
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
