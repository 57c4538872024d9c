// What a bench ran on, so that runs on two machines can be told apart: the host CPU (model, identity,
// SIMD flags), the threads each side used, and torch's version and CPU capability. The same facts go
// to the header (as lines) and to the JSON (as fields).
import type { TorchAnswer } from '../compare/torch.js';
import type { CpuInfo } from '../runtime/cpu-info.js';

export interface MachineFacts {
  readonly platform: string;
  /** The host CPU; on a GPU run, the one that issues the launches. */
  readonly cpu: CpuInfo;
}

export interface ThreadFacts {
  /** The thread budget of our CPU backends (--threads, else ATTN_NUM_THREADS, else every core); null on a GPU. */
  readonly attn: number | null;
  /** torch.get_num_threads() after the script set it; null when torch did not run or on a GPU. */
  readonly torch: number | null;
}

export function machineFacts(cpu: CpuInfo, platform = `${process.platform}-${process.arch}`): MachineFacts {
  return { platform, cpu };
}

export function threadFacts(onCpu: boolean, attnThreads: number, torch: TorchAnswer | null): ThreadFacts {
  if (!onCpu) return { attn: null, torch: null };
  return { attn: attnThreads, torch: torch?.available ? torch.threads : null };
}

/** "cpu: AMD EPYC [AuthenticAMD family 25 model 1 stepping 1], linux-x64, 2 logical CPUs, 32 MiB last-level cache; SIMD avx2 fma" */
export function cpuLine(m: MachineFacts): string {
  const c = m.cpu;
  const cache =
    c.lastLevelCacheBytes === null ? '' : `, ${Math.round(c.lastLevelCacheBytes / 1024 ** 2)} MiB last-level cache`;
  const simd = c.simd.length > 0 ? `; SIMD ${c.simd.join(' ')}` : '; no SIMD flags listed';
  return `cpu: ${c.model}${c.id ? ` [${c.id}]` : ''}, ${m.platform}, ${c.threads} logical CPUs${cache}${simd}`;
}

/** torch's version, device (with the ATen CPU capability there) and threads, or why it was not compared. */
export function torchLine(t: TorchAnswer, threads: ThreadFacts): string {
  if (!t.available) return `torch not compared: ${t.reason}`;
  const counts = threads.attn === null ? `${t.threads} CPU threads` : `${t.threads} threads (ours ${threads.attn})`;
  return `torch ${t.torch} on ${t.device}: ${counts}, timed with ${t.timer}`;
}
