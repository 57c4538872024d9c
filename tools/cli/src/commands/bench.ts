// `attn bench`: a grid of problems on every available backend (and PyTorch's), as a table, JSON and a chart.
import { Command } from 'commander';
import { addBenchOptions, type BenchFlags } from '../bench/options.js';
import { benchPlan } from '../bench/plan.js';
import { makeProgress } from '../bench/progress.js';
import { buildReport, writeReport } from '../bench/report.js';
import { cpuLine, machineFacts, threadFacts, torchLine } from '../bench/machine.js';
import { backendBuilds, pathFacts, pathLines } from '../bench/paths.js';
import { DEFAULT_WARMUP_MS, OVERHEAD_LOOP_CALLS, OVERHEAD_WARMUP_MS } from '../bench/run-case.js';
import { CliUsageError } from '../errors.js';
import { runBench } from '../bench/run-bench.js';
import { renderSkipped, renderTable } from '../bench/table.js';
import { println } from '../io.js';
import { checkOutputWritable } from '../output-path.js';
import { defaultDType } from '../options/problem-options.js';
import { plotFormat, writePlot } from '../plot/render.js';
import { benchBackends } from '../runtime/backends.js';
import { cpuInfo } from '../runtime/cpu-info.js';
import { runtimeModuleFor } from '../runtime/packages.js';
import { resolveTarget, splitDevice } from '../runtime/target.js';
import { cpuThreads, withCpuThreads } from '../runtime/threads.js';
import { resolveDevice, type ContextProvider } from './context.js';

/** Where torch's progress lines go under --quiet (its errors still reach the answer's reason). */
const SILENT = { write: () => true };

export function benchCommand(getContext: ContextProvider): Command {
  const cmd = new Command('bench').description(
    'time a grid of problems on every available backend; table, --json, --plot, --compare torch',
  );
  addBenchOptions(cmd);
  return cmd.action((flags: BenchFlags) => withCpuThreads(flags.threads, () => bench(flags, getContext)));
}

/**
 * --varlen, --index-values-on-device and --out time forward calls only (no backward through them here), and
 * float8_e4m3 inputs have no backward (core refuses requiresGrad with them).
 */
function checkCallFlags(flags: BenchFlags): void {
  if (flags.dtype === 'float8_e4m3' && flags.mode.some((m) => m !== 'fwd'))
    throw new CliUsageError('float8_e4m3 inputs have a forward only: use --mode fwd.');
  if (flags.indexValuesOnDevice && !flags.varlen)
    throw new CliUsageError('--index-values-on-device needs --varlen (dense calls here have no index tensors).');
  const only = ['varlen', 'out'].filter((f) => flags[f as 'varlen' | 'out']);
  if (only.length > 0 && flags.mode.some((m) => m !== 'fwd')) {
    throw new CliUsageError(
      `--${only.join(' and --')} time forward calls: use --mode fwd (backward is timed on dense calls with fresh outputs).`,
    );
  }
}

/** How our calls are made, where not the plain sdpa(q, k, v, opts) with fresh outputs. */
function callForm(flags: BenchFlags): string {
  const parts = [
    flags.varlen ? `sdpaVarlen${flags.indexValuesOnDevice ? ' with indexValuesOnDevice' : ''}` : null,
    flags.out ? 'a preallocated out' : null,
  ].filter(Boolean);
  return parts.length ? `; calls: ${parts.join(', ')}` : '';
}

async function bench(flags: BenchFlags, getContext: ContextProvider): Promise<void> {
  const { io, packages, setExitCode } = await getContext();
  const threads = cpuThreads(flags.threads);
  // A bad extension or an unwritable path fails before the run, not after it.
  if (flags.plot) {
    plotFormat(flags.plot);
    checkOutputWritable(flags.plot, '--plot');
  }
  if (flags.json) checkOutputWritable(flags.json, '--json');
  const device = resolveDevice(flags.device);
  const { type } = splitDevice(device);
  const dtype = flags.dtype ?? defaultDType(device);
  const target = resolveTarget(device, runtimeModuleFor(packages, device)); // first: says why a GPU is unusable
  const backends = benchBackends(type, flags.backends ?? null, packages, flags.kernel ?? null);
  checkCallFlags(flags);
  const plan = benchPlan(flags, device, dtype, type);
  const settings = {
    warmup: flags.warmup,
    warmupMs: flags.warmupMs ?? (flags.overhead ? OVERHEAD_WARMUP_MS : DEFAULT_WARMUP_MS),
    repeat: flags.repeat,
    budgetMs: flags.budget * 1000,
    callsPerSample: flags.overhead ? OVERHEAD_LOOP_CALLS : (flags.loop ?? 1),
  };
  println(
    io.stdout,
    `attn bench on ${target.name}: ${plan.gridName} grid, ${plan.problems.length} case(s) x ${flags.mode.join(',')} x ${backends.map((b) => b.name).join(', ')}; ${dtype}; ` +
      (settings.callsPerSample > 1
        ? `warm-up ${settings.warmupMs} ms (and at least ${settings.warmup}) of loops of ${settings.callsPerSample} back-to-back calls, each disposing its outputs, then the median of up to ${settings.repeat} such loops (torch: the same loops); ${target.clock.description}`
        : `warm-up ${settings.warmup} calls and ${settings.warmupMs} ms, median of up to ${settings.repeat}; ${target.clock.description}`) +
      (type === 'cpu' ? `; ${threads} CPU threads` : '') +
      callForm(flags),
  );
  // What ran where (bench/machine.ts, bench/paths.ts): the CPU, then each backend's kernel path.
  const machine = machineFacts(cpuInfo());
  if (type === 'cpu') println(io.stdout, `  ${cpuLine(machine)}`);
  const builds = backendBuilds(backends, flags.kernel ?? null);
  for (const line of pathLines(builds, dtype)) println(io.stdout, `  ${line}`);
  const torch =
    flags.compare === 'torch'
      ? { python: flags.python, threads, backends: flags.torchBackends ?? null, log: flags.quiet ? SILENT : io.stderr }
      : null;
  const outcome = await runBench(
    plan,
    flags.mode,
    backends,
    target,
    settings,
    makeProgress(io.stderr, flags.quiet),
    torch,
  );

  // torch's side of the header: known once it ran, printed above the table.
  const threadsUsed = threadFacts(type === 'cpu', threads, outcome.torch);
  if (outcome.torch) println(io.stdout, `  ${torchLine(outcome.torch, threadsUsed)}`);
  for (const s of [...outcome.torchSkipped, ...outcome.torchNotes]) println(io.stdout, `  torch: ${s}`);
  println(io.stdout, renderTable(outcome.rows, { bandwidth: plan.kind === 'decode' }));
  const skipped = renderSkipped(outcome.rows);
  if (skipped.length) println(io.stdout, ['Not run:', ...skipped.map((s) => `  ${s}`)].join('\n'));

  if (flags.json) {
    const report = buildReport({
      device: target.name,
      machine,
      clock: target.clock.description,
      settings: { ...flags, warmupMs: settings.warmupMs, threads, plan: plan.gridName },
      backends: builds,
      paths: pathFacts(builds, dtype),
      threads: threadsUsed,
      rows: outcome.rows,
      torch: outcome.torch,
    });
    await writeReport(flags.json, report);
    println(io.stdout, `wrote ${flags.json}`);
  }
  const ran = outcome.rows.some((r) => r.source === 'attn' && r.status === 'ok');
  if (flags.plot && ran) {
    await writePlot(
      flags.plot,
      outcome.rows,
      `attn bench: ${flags.mode.join(', ')} on ${target.name}`,
      `${plan.gridName} grid, ${dtype}, median of up to ${settings.repeat}`,
    );
    println(io.stdout, `wrote ${flags.plot}`);
  }
  if (!ran) {
    println(io.stderr, 'No backend ran any case: see the reasons above.');
    setExitCode(1);
  }
  const failed = outcome.rows.filter((r) => r.source === 'attn' && r.status === 'failed');
  if (flags.strict && failed.length > 0) {
    println(
      io.stderr,
      `--strict: ${failed.length} of our case(s) failed (an error, not a decline): see "Not run" above.`,
    );
    setExitCode(1);
  }
}
