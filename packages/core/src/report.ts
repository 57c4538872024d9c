// The selection report (what explain returns and NoBackendError carries) and its text form.
import type { Reason } from './backend.js';
import { AttnError } from './errors.js';

export interface CandidateReport {
  readonly backend: string;
  readonly priority: number;
  /** The backend declares itself its device's fallback (Backend.fallback). */
  readonly fallback?: boolean;
  readonly available: boolean;
  readonly unavailableReason?: string;
  /** Every failing rule, in the backend's rule order. Empty when all pass. */
  readonly reasons: readonly Reason[];
  readonly selected: boolean;
}

export interface SelectionReport {
  /** 'cpu', 'cuda:0', ... */
  readonly device: string;
  /** The restriction in force (per-call `backends` or the sdpaKernel scope), or null. */
  readonly restrictedTo: readonly string[] | null;
  /** Where the restriction came from. */
  readonly restrictionSource: 'call' | 'scope' | null;
  readonly selected: string | null;
  /** Candidates in the order they were tried. */
  readonly candidates: readonly CandidateReport[];
  /** Backends of this device type left out by the restriction. */
  readonly excluded: readonly string[];
  /** One line describing the call (dtype, shapes, features). */
  readonly call: string;
  /** The kernel option (a kernel family of the backends that declare it), or null. */
  readonly kernel: string | null;
}

function candidateLines(c: CandidateReport, index: number): string[] {
  const head = `  ${index + 1}. ${c.backend} (priority ${c.priority}${c.fallback ? ', fallback' : ''})`;
  let status: string;
  if (c.selected) status = 'selected';
  else if (!c.available) status = `unavailable: ${c.unavailableReason ?? 'no reason given'}`;
  else if (c.reasons.length > 0) status = `rejected (${c.reasons.length} rule${c.reasons.length > 1 ? 's' : ''})`;
  else status = 'would also run';
  return [`${head}: ${status}`, ...c.reasons.map((r) => `       - ${r.rule}: ${r.message}`)];
}

/** Readable text: one line per candidate and one per reason. What NoBackendError and `attn explain` print. */
export function formatReport(report: SelectionReport): string {
  const lines: string[] = [];
  const chosen = report.candidates.find((c) => c.selected);
  lines.push(
    report.selected
      ? `attn: ${report.selected} runs this call on ${report.device}${chosen?.fallback ? ", the device's fallback" : ''}.`
      : `attn: no backend can run this call on ${report.device}.`,
  );
  lines.push(`  call: ${report.call}`);
  if (report.restrictedTo) {
    const from =
      report.restrictionSource === 'scope'
        ? 'sdpaKernel scope'
        : report.kernel !== null
          ? `kernel option ${JSON.stringify(report.kernel)}`
          : 'backends option';
    lines.push(`  restricted to (${from}): ${report.restrictedTo.join(', ')}`);
  }
  if (report.candidates.length === 0) {
    lines.push(
      report.restrictedTo
        ? `  no registered ${report.device.split(':')[0]} backend is in the restriction.`
        : `  no backend is registered for ${report.device.split(':')[0]}: import a backend package (e.g. @attn/cpu).`,
    );
  }
  report.candidates.forEach((c, i) => lines.push(...candidateLines(c, i)));
  if (report.excluded.length > 0) lines.push(`  left out by the restriction: ${report.excluded.join(', ')}`);
  return lines.join('\n');
}

/** No candidate could run the call. `.report` lists every candidate and every failing rule. */
export class NoBackendError extends AttnError {
  readonly report: SelectionReport;
  constructor(report: SelectionReport) {
    super('ATTN_NO_BACKEND', formatReport(report));
    this.report = report;
  }
}
