// The --json file of a bench: what ran where (machine, kernel paths, threads, torch), how it was
// timed, every row, and the ratios to torch.
import { writeFile } from 'node:fs/promises';
import { OutputFileError } from '../errors.js';
import type { TorchAnswer } from '../compare/torch.js';
import type { MachineFacts, ThreadFacts } from './machine.js';
import type { PathFacts } from './paths.js';
import { allRatios, type RatioEntry } from './ratios.js';
import type { BenchRow } from './row.js';

export interface BenchReport {
  readonly version: 1;
  readonly createdAt: string;
  readonly device: string;
  /** The host: platform and CPU (model, identity, logical CPUs, SIMD flags, last-level cache). */
  readonly machine: MachineFacts;
  readonly node: string;
  readonly clock: string;
  readonly flopConvention: string;
  readonly settings: Readonly<Record<string, unknown>>;
  /** Each benched backend's buildInfo(): its ISA, kernel paths and build (bench/paths.ts). */
  readonly backends: Readonly<Record<string, unknown>>;
  /** Per backend, for the bench's dtype: the kernel asked for, the ISA, forward and backward paths, threads. */
  readonly paths: Readonly<Record<string, PathFacts>>;
  /** Threads of our CPU backends and of torch (null on a GPU, or where torch did not run). */
  readonly threads: ThreadFacts;
  /** torch's device: on the CPU it names the SIMD level torch's kernels dispatch to (also as capability). */
  readonly torch: {
    readonly available: boolean;
    readonly version?: string;
    readonly device?: string;
    readonly capability?: string;
    readonly reason?: string;
    readonly timer?: string;
    readonly threads?: number;
  } | null;
  readonly rows: readonly BenchRow[];
  readonly ratios: readonly RatioEntry[];
}

export const FLOP_CONVENTION =
  'fwd = 4*B*Hq*Sq*Sk*(D+Dv)/2; causal with Sq == Sk: half; Sq != Sk or a window: exact visible fraction; bwd = 2.5x fwd; fwdbwd = 3.5x fwd';

export function buildReport(args: {
  device: string;
  machine: MachineFacts;
  clock: string;
  settings: Record<string, unknown>;
  /** Each benched backend's buildInfo() (bench/paths.ts). */
  backends?: Record<string, unknown>;
  paths?: Record<string, PathFacts>;
  threads: ThreadFacts;
  rows: readonly BenchRow[];
  torch: TorchAnswer | null;
}): BenchReport {
  const t = args.torch;
  return {
    version: 1,
    createdAt: new Date().toISOString(),
    device: args.device,
    machine: args.machine,
    node: process.version,
    clock: args.clock,
    flopConvention: FLOP_CONVENTION,
    settings: args.settings,
    backends: args.backends ?? {},
    paths: args.paths ?? {},
    threads: args.threads,
    torch:
      t === null
        ? null
        : t.available
          ? {
              available: true,
              version: t.torch,
              device: t.device,
              ...(t.capability ? { capability: t.capability } : {}),
              timer: t.timer,
              threads: t.threads,
            }
          : { available: false, reason: t.reason },
    rows: args.rows,
    ratios: allRatios(args.rows),
  };
}

export async function writeReport(path: string, report: BenchReport): Promise<void> {
  try {
    await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  } catch (err) {
    throw new OutputFileError(path, err);
  }
}
