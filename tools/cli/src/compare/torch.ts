// --compare torch: the same problems through PyTorch's SDPA backends, by spawning python3 with the
// script shipped in ../python (JSON in on stdin, JSON out on stdout, progress on stderr).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from '../bench/row.js';
import { rowBase, timedRow } from '../bench/row.js';
import type { Mode } from '../flops.js';
import type { OutStream } from '../io.js';
import type { MaskKind, ProblemSpec } from '../problem.js';
import { splitDevice } from '../runtime/target.js';

export const TORCH_BACKENDS = { gpu: ['flash', 'efficient', 'cudnn', 'math'], cpu: ['math', 'flash'] } as const;

export interface TorchCase {
  readonly id: number;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  readonly causal: boolean;
  readonly alignment: string;
  readonly dropoutP: number;
  /**
   * A random [B, 1, Sq, Sk] mask made as ours (runtime/inputs.ts): 'additive' N(0, 1) in the
   * problem's dtype, requiring grad in the backward modes (ours computes dbias there); 'bool' keeps
   * each key with probability 0.9. With causal it goes to torch together with is_causal=True.
   */
  readonly mask: MaskKind | null;
}

export interface TorchRequest {
  readonly device: 'cuda' | 'cpu';
  readonly deviceIndex: number;
  readonly threads: number;
  readonly dtype: string;
  readonly warmup: number;
  readonly warmupMs: number;
  readonly repeat: number;
  readonly budgetMs: number;
  /** Calls per timed sample (the loop of `attn bench --overhead`); the script reports per call. */
  readonly callsPerSample: number;
  readonly modes: readonly Mode[];
  readonly backends: readonly string[];
  readonly cases: readonly TorchCase[];
}

export interface TorchResult {
  readonly case: number;
  readonly mode: Mode;
  readonly backend: string;
  readonly ok: boolean;
  readonly reason?: string;
  readonly medianMs?: number;
  readonly p20Ms?: number;
  readonly p80Ms?: number;
  readonly samples?: number;
}

export type TorchAnswer =
  | {
      readonly available: true;
      readonly torch: string;
      readonly device: string;
      /** On the CPU: torch.backends.cpu.get_cpu_capability(), the SIMD level its kernels dispatch to. */
      readonly capability?: string;
      readonly threads: number;
      readonly timer: string;
      readonly results: readonly TorchResult[];
    }
  | { readonly available: false; readonly reason: string; readonly torch?: string };

/**
 * The dtype torch runs a problem in: its own, except float8_e4m3, for which torch has no attention: its bfloat16
 * call is what a torch user runs instead (torch's rows say bfloat16, and ratios compare ours with them).
 */
export function torchDType(dtype: string): string {
  return dtype === 'float8_e4m3' ? 'bfloat16' : dtype;
}

/** Why torch cannot run this problem the same way, or null. */
export function torchIncompatibility(p: ProblemSpec): string | null {
  const missing = [p.window && 'a window', p.alibi && 'ALiBi', p.softcap > 0 && 'softcap'].filter(Boolean);
  if (missing.length) return `torch's SDPA is not compared on problems with ${missing.join(', ')}`;
  // Lower-right causal goes to torch as a CausalBias attn_mask, which takes no second mask; folding
  // the causal triangle into a dense mask would time every score tile where ours skips half.
  if (p.mask && p.causal && p.alignment === 'lowerRight' && p.seqQ !== p.seqK) {
    return "torch's SDPA is not compared on problems with a mask and lower-right causal when Sq != Sk (its causal_lower_right bias takes no second mask)";
  }
  return null;
}

export function torchRequest(
  problems: readonly ProblemSpec[],
  modes: readonly Mode[],
  timing: { warmup: number; warmupMs: number; repeat: number; budgetMs: number; callsPerSample?: number },
  threads: number,
  backends: readonly string[] | null,
): TorchRequest {
  const first = problems[0];
  const { type, index } = first ? splitDevice(first.device) : { type: 'cpu' as const, index: 0 };
  const gpu = type !== 'cpu';
  return {
    device: gpu ? 'cuda' : 'cpu', // ROCm builds of torch also call the device 'cuda'
    deviceIndex: index,
    threads,
    dtype: first ? torchDType(first.dtype) : 'float32',
    ...timing,
    callsPerSample: timing.callsPerSample ?? 1,
    modes,
    backends: backends ?? (gpu ? TORCH_BACKENDS.gpu : TORCH_BACKENDS.cpu),
    cases: problems.map((p, id) => ({
      id,
      batch: p.batch,
      headsQ: p.headsQ,
      headsKV: p.headsKV,
      seqQ: p.seqQ,
      seqK: p.seqK,
      headDim: p.headDim,
      headDimV: p.headDimV,
      causal: p.causal,
      alignment: p.alignment,
      dropoutP: p.dropoutP,
      mask: p.mask,
    })),
  };
}

/** The shipped script, from src/compare/ (tests) or from dist/ (the built bin). */
export function torchScriptPath(): string {
  for (const rel of ['../python/torch_sdpa_bench.py', '../../python/torch_sdpa_bench.py']) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  return fileURLToPath(new URL('../python/torch_sdpa_bench.py', import.meta.url));
}

/** Runs the script; any failure (no python, a crash, bad JSON) becomes { available: false, reason }. */
export function runTorch(
  request: TorchRequest,
  python: string,
  progress: OutStream,
  script = torchScriptPath(),
): Promise<TorchAnswer> {
  return new Promise((resolve) => {
    const child = spawn(python, [script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let errTail = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      progress.write(d);
      errTail = (errTail + d).slice(-2000);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      const reason =
        err.code === 'ENOENT'
          ? `${python} was not found on PATH; install Python 3 with torch, or pass --python <path>`
          : err.message;
      resolve({ available: false, reason });
    });
    child.on('close', (code) => {
      try {
        const answer = JSON.parse(out) as TorchAnswer;
        if (typeof answer.available !== 'boolean') throw new Error('no "available" field');
        resolve(answer);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        resolve({
          available: false,
          reason: `${python} ${script} exited ${code} without a readable answer (${why}); stderr: ${errTail.trim().slice(-300)}`,
        });
      }
    });
    child.stdin.on('error', () => {}); // a python that exits at once closes the pipe; 'close' reports it
    child.stdin.end(JSON.stringify(request));
  });
}

/** Bench rows for torch's results, named 'torch-<backend>'. */
export function torchRows(problems: readonly ProblemSpec[], answer: TorchAnswer): BenchRow[] {
  if (!answer.available) return [];
  return answer.results.flatMap((r) => {
    const p = problems[r.case];
    if (!p) return [];
    const asRun: ProblemSpec = { ...p, dtype: torchDType(p.dtype) as ProblemSpec['dtype'] };
    const base = rowBase(
      r.mode === 'fwd' ? asRun : { ...asRun, requiresGrad: true },
      r.mode,
      `torch-${r.backend}`,
      'torch',
    );
    if (!r.ok || r.medianMs === undefined)
      return [{ ...base, status: 'unsupported', reason: r.reason ?? 'no reason given' } as BenchRow];
    return [
      timedRow(
        base,
        { medianMs: r.medianMs, p20Ms: r.p20Ms ?? r.medianMs, p80Ms: r.p80Ms ?? r.medianMs, count: r.samples ?? 0 },
        0,
      ),
    ];
  });
}
