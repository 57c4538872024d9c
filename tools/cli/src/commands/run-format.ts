// How `attn run` prints its result for a person.
import { formatReport } from '@attn/core';
import { visibleFraction } from '../flops.js';
import { formatError, formatRate, formatTime } from '../format.js';
import { describeFeatures, describeShape } from '../problem.js';
import type { CheckResult } from '../runtime/check.js';
import type { RunResult } from '../runtime/run-problem.js';

function flopNote(r: RunResult): string {
  const frac = visibleFraction(r.problem);
  const parts = ['4*B*Hq*Sq*Sk*D'];
  if (frac !== 1) parts.push(frac === 0.5 ? 'x 1/2 (causal)' : `x ${frac.toFixed(4)} (visible fraction)`);
  if (r.mode !== 'fwd') parts.push(r.mode === 'bwd' ? 'x 2.5 (backward)' : 'x 3.5 (forward + backward)');
  return parts.join(' ');
}

function checkLines(c: CheckResult): string[] {
  if (c.status === 'skipped') return [`error     skipped: ${c.reason}`];
  return Object.entries(c.errors).map(
    ([name, e], i) =>
      `${i === 0 ? 'error    ' : '         '} ${name.padEnd(3)} max abs ${formatError(e.maxAbs)}, mean abs ${formatError(e.meanAbs)}, max rel ${formatError(e.maxRel)}${i === 0 ? `  vs ${c.reference}` : ''}`,
  );
}

/** The loop figure and where its time goes: host (issuing the call and disposing its outputs) or device. */
function loopLines(r: RunResult): string[] {
  const l = r.loop;
  const t = r.timing;
  if (!l || !t) return [];
  const lines = [
    `loop      ${formatTime(l.perCallMs)} per call over ${l.calls} back-to-back calls with their outputs disposed (median of ${l.loops} loops)`,
  ];
  // On the CPU the host does the work itself; on a device it only issues it.
  if (String(r.problem.device).startsWith('cpu')) return lines;
  const bound =
    l.hostPerCallMs >= 0.9 * l.perCallMs
      ? 'host-bound: the host issues calls no faster than this'
      : 'device-bound: the host issues calls faster';
  const share = Math.min(100, (100 * l.hostPerCallMs) / l.perCallMs).toFixed(0);
  lines.push(
    `          host ${formatTime(l.hostPerCallMs)} per call to issue and dispose (${share}% of the loop's), ${bound}; device ${formatTime(t.medianMs)} per call alone (events around one call)`,
  );
  return lines;
}

export function formatRun(r: RunResult): string {
  const p = r.problem;
  const lines = [
    `attn run: ${describeShape(p)}, ${p.dtype}, ${describeFeatures(p)}, ${r.mode} on ${r.device}`,
    '',
    formatReport(r.selection),
    '',
  ];
  if (r.backend === null || r.timing === null) {
    lines.push('No backend ran: every candidate declined (reasons above).');
    return lines.join('\n');
  }
  const t = r.timing;
  lines.push(
    `backend   ${r.backend}`,
    `time      ${formatTime(t.medianMs)} median of ${t.count} (p20 ${formatTime(t.p20Ms)}, p80 ${formatTime(t.p80Ms)}; ${t.sets} input set${t.sets > 1 ? 's' : ''} rotated; ${t.clock} around each call)`,
    ...loopLines(r),
    `work      ${(r.flops / 1e9).toPrecision(4)} GFLOP = ${flopNote(r)}`,
    `rate      ${formatRate(r.flopsPerSecond ?? Number.NaN)}`,
    ...checkLines(r.check),
  );
  return lines.join('\n');
}
