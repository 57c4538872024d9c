// Backend selection: candidates for the query's device in priority order (or the restriction's
// order), each asked availability() and then every rule; the first with no reason runs. Unlike
// PyTorch, every failing rule of every candidate is reported, not only the first.
import type { Backend, Reason, RuleContext } from './backend.js';
import { deviceToString } from './device-parse.js';
import { ruleContext } from './device-context.js';
import type { SdpaParams } from './params.js';
import { listBackends } from './registry.js';
import { type CandidateReport, NoBackendError, type SelectionReport } from './report.js';
import { currentKernelScope } from './scope.js';

/** Where a restriction came from, and its names (null = none). */
export interface Restriction {
  readonly names: readonly string[] | null;
  readonly source: 'call' | 'scope' | null;
}

/** The per-call list wins; else the innermost sdpaKernel scope; else none. */
export function resolveRestriction(callBackends: readonly string[] | null): Restriction {
  if (callBackends) return { names: callBackends, source: 'call' };
  const scope = currentKernelScope();
  return scope ? { names: scope, source: 'scope' } : { names: null, source: null };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Every failing rule. A rule that throws is a failing rule too (its error is the reason), never a pass. */
export function failingRules(backend: Backend, params: SdpaParams, ctx: RuleContext): Reason[] {
  const reasons: Reason[] = [];
  for (const r of backend.rules) {
    let message: string | null;
    try {
      message = r.check(params, ctx);
    } catch (e) {
      message = `the check itself failed (${errorText(e)}); this is a bug in the rule`;
    }
    if (message !== null) reasons.push({ rule: r.name, message });
  }
  return reasons;
}

function availabilityOf(backend: Backend): { available: boolean; reason?: string } {
  try {
    const a = backend.availability();
    return a.ok ? { available: true } : { available: false, reason: a.reason };
  } catch (e) {
    return { available: false, reason: `availability() threw: ${errorText(e)}` };
  }
}

/** A one-line description of the call for reports. */
export function describeCall(p: SdpaParams): string {
  const shape = (s: readonly number[]): string => `[${s.join(', ')}]`;
  const parts = [`${p.dtype} q${shape(p.query.shape)} k${shape(p.key.shape)} v${shape(p.value.shape)}`];
  if (p.varlen) parts.push(`varlen (${p.batch} sequences, max ${p.seqQ}/${p.seqK})`);
  if (p.sequsedK) parts.push('sequsedK');
  if (p.paged) parts.push(`paged K/V (${p.paged.numBlocks} blocks of ${p.paged.blockSize})`);
  const kv = p.kvCache;
  if (kv) {
    const extras = [kv.newLen > 0 ? `append ${kv.newLen}` : null, kv.rotary ? `rotary ${kv.rotary.dim}${kv.rotary.interleaved ? ' interleaved' : ''}` : null, kv.cacheBatchIdx ? 'cacheBatchIdx' : null, kv.leftpadK ? 'leftpadK' : null];
    parts.push(`kv cache (${p.batch} rows of up to ${kv.capacity} keys${extras.filter(Boolean).map((e) => `, ${e}`).join('')})`);
  }
  if (p.mask) parts.push(`${p.mask.kind} mask ${shape(p.mask.tensor.shape)} ${p.mask.tensor.dtype}`);
  if (p.causal) parts.push(`causal (${p.alignment})`);
  if (p.window) parts.push(`window [${p.window.left ?? -1}, ${p.window.right ?? -1}]`);
  if (p.alibiSlopes) parts.push('alibi');
  if (p.softcap) parts.push(`softcap ${p.softcap}`);
  if (p.dropout) parts.push(`dropout ${p.dropout.p}`);
  if (p.enableGqa) parts.push('gqa');
  if (p.requiresGrad) parts.push('requiresGrad');
  if (p.deterministic) parts.push('deterministic');
  return parts.join(', ');
}

export interface Selection {
  readonly backend: Backend | null;
  readonly report: SelectionReport;
}

/**
 * Runs selection. With exhaustive = false it stops at the first backend that can run (the call
 * path); explain passes true so that the report covers every candidate.
 */
export function selectBackend(params: SdpaParams, restriction: Restriction, exhaustive: boolean): Selection {
  const all = listBackends(params.device.type);
  const candidates = restriction.names
    ? restriction.names.flatMap((n) => all.filter((e) => e.name === n))
    : all;
  const excluded = restriction.names ? all.filter((e) => !restriction.names!.includes(e.name)).map((e) => e.name) : [];
  const ctx = ruleContext(params.device);
  const reports: CandidateReport[] = [];
  let chosen: Backend | null = null;
  for (const entry of candidates) {
    if (chosen && !exhaustive) break;
    const avail = availabilityOf(entry.backend);
    const reasons = failingRules(entry.backend, params, ctx);
    const selected = !chosen && avail.available && reasons.length === 0;
    if (selected) chosen = entry.backend;
    reports.push({
      backend: entry.name,
      priority: entry.priority,
      ...(entry.backend.fallback ? { fallback: true } : {}),
      available: avail.available,
      ...(avail.available ? {} : { unavailableReason: avail.reason ?? 'no reason given' }),
      reasons,
      selected,
    });
  }
  const report: SelectionReport = {
    device: deviceToString(params.device),
    restrictedTo: restriction.names,
    restrictionSource: restriction.source,
    selected: chosen?.name ?? null,
    candidates: reports,
    excluded,
    call: describeCall(params),
  };
  return { backend: chosen, report };
}

/** Whether every rule passes; stops at the first failing (or throwing) one. */
function passesAllRules(backend: Backend, params: SdpaParams, ctx: RuleContext): boolean {
  for (const r of backend.rules) {
    try {
      if (r.check(params, ctx) !== null) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * The call path's selection without a report: the same first candidate selectBackend chooses (same order,
 * availability, then every rule), but no report objects, reasons or describeCall strings are built and
 * rule checks stop at the first failure. The report is built only when nothing can run.
 */
function firstRunnable(params: SdpaParams, restriction: Restriction): Backend | null {
  const all = listBackends(params.device.type);
  const ctx = ruleContext(params.device);
  const consider = (e: { backend: Backend }): boolean =>
    availabilityOf(e.backend).available && passesAllRules(e.backend, params, ctx);
  if (restriction.names) {
    for (const n of restriction.names) for (const e of all) if (e.name === n && consider(e)) return e.backend;
    return null;
  }
  for (const e of all) if (consider(e)) return e.backend;
  return null;
}

/** The backend that runs the call, or NoBackendError with the full report. */
export function requireBackend(params: SdpaParams, restriction: Restriction): Backend {
  const fast = firstRunnable(params, restriction);
  if (fast) return fast;
  // When nothing is chosen the loop never stopped early, so the report already covers every candidate.
  const { backend, report } = selectBackend(params, restriction, false);
  if (backend) return backend;
  throw new NoBackendError(report);
}
