// The bench results as a terminal table (cli-table3), with ratio columns when torch ran.
import Table from 'cli-table3';
import { formatRate, formatRatio, formatTime } from '../format.js';
import { ratioTo, torchBackends } from './ratios.js';
import type { BenchRow } from './row.js';

export interface TableOptions {
  /** Show achieved GB/s (decode is memory-bound). */
  readonly bandwidth?: boolean;
}

function heads(r: BenchRow): string {
  return r.headsKV === r.headsQ ? String(r.headsQ) : `${r.headsQ}/${r.headsKV}`;
}

function seq(r: BenchRow): string {
  return r.seqQ === r.seqK ? String(r.seqK) : `${r.seqQ}/${r.seqK}`;
}

export function renderTable(rows: readonly BenchRow[], opts: TableOptions = {}): string {
  const torch = torchBackends(rows);
  const head = ['backend', 'mode', 'dtype', 'B', 'H', 'S', 'D', 'causal', 'time', 'rate'];
  if (opts.bandwidth) head.push('GB/s');
  for (const t of torch) head.push(`vs ${t}`);
  const table = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const r of rows) {
    const ok = r.status === 'ok';
    const cells = [
      r.backend,
      r.mode,
      r.dtype,
      String(r.batch),
      heads(r),
      seq(r),
      r.headDimV === r.headDim ? String(r.headDim) : `${r.headDim}/${r.headDimV}`,
      r.causal ? 'yes' : 'no',
      ok ? formatTime(r.medianMs!) : r.status,
      ok ? formatRate(r.tflops! * 1e12) : '-',
    ];
    if (opts.bandwidth) cells.push(ok ? (r.bytes / (r.medianMs! / 1000) / 1e9).toFixed(1) : '-');
    for (const t of torch) {
      const ratio = r.source === 'attn' ? ratioTo(r, t, rows) : null;
      cells.push(ratio === null ? '-' : formatRatio(ratio));
    }
    table.push(cells);
  }
  return table.toString();
}

/** "backend (mode): reason" once per distinct reason, for rows that did not run. */
export function renderSkipped(rows: readonly BenchRow[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of rows) {
    if (r.status === 'ok') continue;
    const line = `${r.backend} ${r.mode} ${r.status}: ${r.reason ?? 'no reason given'}`;
    if (!seen.has(line)) {
      seen.add(line);
      out.push(line);
    }
  }
  return out;
}
