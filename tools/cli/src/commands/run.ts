// `attn run`: one problem on random inputs: the backend chosen and why, its time, rate and error.
import { Command, Option } from 'commander';
import { MODES, type Mode } from '../flops.js';
import { println } from '../io.js';
import { addShapeOptions, problemFrom, type ShapeFlags } from '../options/problem-options.js';
import { parseNonNegativeInt, parsePositiveInt, parsePositiveNumber } from '../options/parse.js';
import { checkBackendNames } from '../runtime/backends.js';
import { DEFAULT_CHECK_LIMIT } from '../runtime/check.js';
import { runtimeModuleFor } from '../runtime/packages.js';
import { runProblem } from '../runtime/run-problem.js';
import { resolveTarget } from '../runtime/target.js';
import { withCpuThreads } from '../runtime/threads.js';
import { resolveDevice, type ContextProvider } from './context.js';
import { formatRun } from './run-format.js';

interface RunFlags extends ShapeFlags {
  mode: Mode;
  repeat: number;
  warmup: number;
  warmupMs: number;
  budget: number;
  check: boolean;
  checkLimit: number;
  json?: boolean;
  threads?: number;
}

export function runCommand(getContext: ContextProvider): Command {
  const cmd = new Command('run').description(
    'run one problem on random inputs: backend, time, rate, error vs the reference',
  );
  addShapeOptions(cmd)
    .addOption(new Option('--mode <mode>', 'fwd, bwd (backward only) or fwdbwd').choices(MODES).default('fwd'))
    .addOption(new Option('--repeat <n>', 'timed calls (median reported)').argParser(parsePositiveInt).default(10))
    .addOption(new Option('--warmup <n>', 'untimed calls first').argParser(parseNonNegativeInt).default(2))
    .addOption(
      new Option(
        '--warmup-ms <ms>',
        'and untimed calls until this long went into them (the steady state: JavaScript call paths are optimized after hundreds of calls)',
      )
        .argParser(parseNonNegativeInt)
        .default(200),
    )
    .addOption(
      new Option('--budget <seconds>', 'stop timing after this long (at least 3 calls)')
        .argParser(parsePositiveNumber)
        .default(10),
    )
    .addOption(new Option('--no-check', 'skip the comparison with cpu-math'))
    .addOption(
      new Option('--check-limit <n>', 'largest B*H*Sq*Sk compared with cpu-math')
        .argParser(parsePositiveInt)
        .default(DEFAULT_CHECK_LIMIT),
    )
    .addOption(
      new Option('--threads <n>', 'CPU threads for cpu-flash (sets ATTN_NUM_THREADS for this run)').argParser(
        parsePositiveInt,
      ),
    )
    .addOption(new Option('--json', 'print the result as JSON'));
  return cmd.action((flags: RunFlags) => withCpuThreads(flags.threads, () => run(flags, getContext)));
}

async function run(flags: RunFlags, getContext: ContextProvider): Promise<void> {
  const { io, packages, setExitCode } = await getContext();
  const problem = problemFrom(flags, resolveDevice(flags.device));
  if (flags.backends) checkBackendNames(flags.backends, packages);
  const target = resolveTarget(problem.device, runtimeModuleFor(packages, problem.device));
  const result = runProblem(problem, target, {
    mode: flags.mode,
    backends: flags.backends ?? null,
    warmup: flags.warmup,
    warmupMs: flags.warmupMs,
    repeat: flags.repeat,
    budgetMs: flags.budget * 1000,
    checkLimit: flags.check ? flags.checkLimit : null,
  });
  println(io.stdout, flags.json ? JSON.stringify(result, null, 2) : formatRun(result));
  if (result.backend === null) setExitCode(1);
}
