// Bench progress: a cli-progress bar on a terminal, one plain line per result otherwise (logs, CI).
import cliProgress from 'cli-progress';
import { formatRate, formatTime } from '../format.js';
import { println, type OutStream } from '../io.js';
import type { BenchRow } from './row.js';

export interface Progress {
  start(total: number): void;
  done(row: BenchRow): void;
  /** A note that must not tear the bar (e.g. "running torch"). */
  note(text: string): void;
  stop(): void;
}

export function rowLabel(r: BenchRow): string {
  const heads = r.headsKV === r.headsQ ? `H=${r.headsQ}` : `Hq=${r.headsQ} Hk=${r.headsKV}`;
  const seq = r.seqQ === r.seqK ? `S=${r.seqK}` : `Sq=${r.seqQ} Sk=${r.seqK}`;
  return `${r.backend} ${r.mode} B=${r.batch} ${heads} ${seq} D=${r.headDim}${r.causal ? ' causal' : ''}`;
}

export function rowOutcome(r: BenchRow): string {
  if (r.status !== 'ok') return `${r.status}: ${r.reason ?? ''}`;
  return `${formatTime(r.medianMs!)}, ${formatRate(r.tflops! * 1e12)}`;
}

function plainProgress(stream: OutStream): Progress {
  let total = 0;
  let n = 0;
  return {
    start: (t) => {
      total = t;
      n = 0;
    },
    done: (r) => println(stream, `[${++n}/${total}] ${rowLabel(r)}: ${rowOutcome(r)}`),
    note: (text) => println(stream, text),
    stop: () => {},
  };
}

function barProgress(stream: OutStream): Progress {
  const bar = new cliProgress.SingleBar(
    {
      stream: stream as NodeJS.WritableStream,
      format: '{bar} {value}/{total} | {label}',
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  return {
    start: (t) => bar.start(t, 0, { label: 'starting' }),
    done: (r) => bar.increment(1, { label: `${rowLabel(r)}: ${rowOutcome(r)}` }),
    note: (text) => bar.update({ label: text }),
    stop: () => bar.stop(),
  };
}

/** A bar when `stream` is a terminal; plain lines otherwise; nothing when quiet. */
export function makeProgress(stream: OutStream, quiet = false): Progress {
  if (quiet) return { start() {}, done() {}, note() {}, stop() {} };
  return stream.isTTY ? barProgress(stream) : plainProgress(stream);
}
