// `attn bench` options: grid, modes, timing, outputs, comparison.
import { Option, type Command } from 'commander';
import { MODES, type Mode } from '../flops.js';
import { addFeatureOptions, type FeatureFlags } from '../options/problem-options.js';
import { DEFAULT_WARMUP_MS, OVERHEAD_LOOP_CALLS, OVERHEAD_WARMUP_MS } from './run-case.js';
import {
  choiceList,
  parseNameList,
  parseNonNegativeInt,
  parsePositiveInt,
  parsePositiveNumber,
  parseSizeList,
} from '../options/parse.js';

export interface BenchFlags extends FeatureFlags {
  mode: Mode[];
  grid?: 'standard' | 'cpu';
  seq?: number[];
  dim?: number[];
  batch?: number;
  heads?: number;
  kvHeads?: number;
  tokens?: number;
  hidden?: number;
  causal?: boolean;
  nonCausal?: boolean;
  decode?: boolean;
  overhead?: boolean;
  /** Calls per timed sample on both sides (--loop); unset: one call per sample. */
  loop?: number;
  repeat: number;
  warmup: number;
  /** Unset: DEFAULT_WARMUP_MS, or OVERHEAD_WARMUP_MS with --overhead. */
  warmupMs?: number;
  budget: number;
  json?: string;
  plot?: string;
  compare?: 'torch';
  python: string;
  threads?: number;
  torchBackends?: string[];
  quiet?: boolean;
  strict?: boolean;
}

const GRID_FLAGS = ['seq', 'dim', 'batch', 'heads', 'kvHeads', 'tokens', 'hidden', 'grid'];

export function addBenchOptions(cmd: Command): Command {
  cmd
    .addOption(
      new Option('--mode <modes>', 'fwd, bwd, fwdbwd (comma list)')
        .argParser(choiceList(MODES))
        .default(['fwd'], 'fwd'),
    )
    .addOption(
      new Option(
        '--grid <name>',
        'standard: S 512..16k, B*S=16k, H*D=2048, D 64/128/256; cpu: S 128..1k, B*S=1k, H*D=256, D 64/128 (default: standard on a GPU, cpu on the CPU)',
      ).choices(['standard', 'cpu']),
    )
    .addOption(new Option('--seq <list>', 'sequence lengths, e.g. 512,1k,2k').argParser(parseSizeList))
    .addOption(new Option('--dim <list>', 'head dims, e.g. 64,128').argParser(parseSizeList))
    .addOption(new Option('--batch <n>', 'fixed batch (default: tokens / S)').argParser(parsePositiveInt))
    .addOption(new Option('--heads <n>', 'fixed query heads (default: hidden / D)').argParser(parsePositiveInt))
    .addOption(
      new Option('--kv-heads <n>', 'key/value heads (default: the query heads; fewer needs --gqa)').argParser(
        parsePositiveInt,
      ),
    )
    .addOption(new Option('--tokens <n>', 'B*S of the grid').argParser(parsePositiveInt))
    .addOption(new Option('--hidden <n>', 'H*D of the grid').argParser(parsePositiveInt))
    .addOption(new Option('--causal', 'only causal cases (default: causal and not)').conflicts('nonCausal'))
    .addOption(new Option('--non-causal', 'only non-causal cases'))
    .addOption(
      new Option('--decode', 'decode preset: B=8, Hq=32, Hk=8, Sq=1, Sk=8192, D=128').conflicts([
        ...GRID_FLAGS,
        'causal',
        'nonCausal',
      ]),
    )
    .addOption(
      new Option(
        '--overhead',
        `the loop figure: each sample is ${OVERHEAD_LOOP_CALLS} back-to-back calls, each disposing its outputs (forward: sdpa() then out.dispose(), an inference loop), after ${OVERHEAD_WARMUP_MS} ms of such loops (torch: the same loops); alone: at B=1, H=1, S=16, D=64, with --decode: at the decode shape`,
      ).conflicts(GRID_FLAGS),
    )
    .addOption(
      new Option(
        '--varlen',
        "packed inputs through sdpaVarlen (every sequence of the problem's lengths); torch runs its dense SDPA on the same shapes",
      ).conflicts(['mask']),
    )
    .addOption(
      new Option(
        '--index-values-on-device',
        'with --varlen: indexValuesOnDevice (no host read of cuSeqlensQ/K per call)',
      ),
    )
    .addOption(
      new Option(
        '--out',
        'each call writes into a preallocated output (the out option); torch allocates (its SDPA has no out=)',
      ),
    );
  addFeatureOptions(cmd);
  return cmd
    .addOption(
      new Option('--repeat <n>', 'timed calls per case (median reported)').argParser(parsePositiveInt).default(10),
    )
    .addOption(
      new Option(
        '--loop <calls>',
        'each timed sample is this many back-to-back calls, each disposing its outputs, timed as one (torch: the same loop): the steady state of a loop that keeps the GPU busy, without the launch latency a lone call shows (default: one call per sample)',
      )
        .argParser(parsePositiveInt)
        .conflicts('overhead'),
    )
    .addOption(new Option('--warmup <n>', 'untimed calls per case').argParser(parseNonNegativeInt).default(2))
    .addOption(
      new Option(
        '--warmup-ms <ms>',
        `and untimed calls until this long went into them (JavaScript call paths are optimized after hundreds of calls; torch gets the same; default ${DEFAULT_WARMUP_MS}, ${OVERHEAD_WARMUP_MS} with --overhead)`,
      ).argParser(parseNonNegativeInt),
    )
    .addOption(
      new Option('--budget <seconds>', 'stop timing a case after this long (at least 3 calls)')
        .argParser(parsePositiveNumber)
        .default(3),
    )
    .addOption(new Option('--json <file>', 'write every result as JSON'))
    .addOption(new Option('--plot <file>', 'write a chart of the rate against sequence length (.svg or .html)'))
    .addOption(
      new Option('--compare <what>', "also time PyTorch's SDPA backends on the same shapes").choices(['torch']),
    )
    .addOption(new Option('--python <path>', 'python with torch, for --compare torch').default('python3'))
    .addOption(
      new Option(
        '--threads <n>',
        'CPU threads for cpu-flash (ATTN_NUM_THREADS) and for torch (default: ATTN_NUM_THREADS, else every core)',
      ).argParser(parsePositiveInt),
    )
    .addOption(
      new Option(
        '--torch-backends <names>',
        'torch backends to compare (default: flash,efficient,cudnn,math on a GPU; math,flash on the CPU)',
      ).argParser(parseNameList),
    )
    .addOption(new Option('--quiet', 'no progress output'))
    .addOption(
      new Option(
        '--strict',
        'exit 1 when one of our backends fails a case (throws; declining a case is not a failure), as the CI smoke does',
      ),
    );
}
