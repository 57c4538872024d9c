// Backend selection: candidates for the query's device in priority order (or the restriction's
// order), each asked availability() and then every rule; the first with no reason runs. Unlike
// PyTorch, every failing rule of every candidate is reported, not only the first.
import type { Backend, Reason, Rule, RuleContext } from './backend.js';
import type { CacheEntry, CachedSelection, PathStep } from './call-cache.js';
import { deviceToString } from './device-parse.js';
import { rulesFor } from './kernel-option.js';
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

/**
 * Every failing rule (the kernel rule included when the call names a kernel). A rule that throws is a
 * failing rule too (its error is the reason), never a pass.
 */
export function failingRules(backend: Backend, params: SdpaParams, ctx: RuleContext): Reason[] {
  return checkRules(rulesFor(backend, params), params, ctx);
}

/** The failing ones of `rules` (a throwing check fails with its error as the reason). */
export function checkRules(rules: readonly Rule[], params: SdpaParams, ctx: RuleContext): Reason[] {
  const reasons: Reason[] = [];
  for (const r of rules) {
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
  const parts = [`${p.query.dtype} q${shape(p.query.shape)} k${shape(p.key.shape)} v${shape(p.value.shape)}`];
  const d = p.descale;
  if (d) parts.push(`descale q ${d.q}, k ${d.k}, v ${d.v}, ${p.dtype} out`);
  if (p.varlen) parts.push(`varlen (${p.batch} sequences, max ${p.seqQ}/${p.seqK})`);
  if (p.sequsedK) parts.push('sequsedK');
  if (p.paged) parts.push(`paged K/V (${p.paged.numBlocks} blocks of ${p.paged.blockSize})`);
  const kv = p.kvCache;
  if (kv) {
    const extras = [
      kv.newLen > 0 ? `append ${kv.newLen}` : null,
      kv.rotary ? `rotary ${kv.rotary.dim}${kv.rotary.interleaved ? ' interleaved' : ''}` : null,
      kv.cacheBatchIdx ? 'cacheBatchIdx' : null,
      kv.leftpadK ? 'leftpadK' : null,
    ];
    parts.push(
      `kv cache (${p.batch} rows of up to ${kv.capacity} keys${extras
        .filter(Boolean)
        .map((e) => `, ${e}`)
        .join('')})`,
    );
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
  if (p.kernel !== null) parts.push(`kernel ${p.kernel}`);
  return parts.join(', ');
}

export interface Selection {
  readonly backend: Backend | null;
  readonly report: SelectionReport;
}

/** A candidate's failing checks; failingRules for the plain call, a form's own (sdpaBackwardFrom) otherwise. */
export type CandidateReasons = (backend: Backend, params: SdpaParams, ctx: RuleContext) => Reason[];

/**
 * Runs selection. With exhaustive = false it stops at the first backend that can run (the call
 * path); explain passes true so that the report covers every candidate.
 */
export function selectBackend(
  params: SdpaParams,
  restriction: Restriction,
  exhaustive: boolean,
  reasonsOf: CandidateReasons = failingRules,
): Selection {
  const all = listBackends(params.device.type);
  const candidates = restriction.names ? restriction.names.flatMap((n) => all.filter((e) => e.name === n)) : all;
  const excluded = restriction.names ? all.filter((e) => !restriction.names!.includes(e.name)).map((e) => e.name) : [];
  const ctx = ruleContext(params.device);
  const reports: CandidateReport[] = [];
  let chosen: Backend | null = null;
  for (const entry of candidates) {
    if (chosen && !exhaustive) break;
    const avail = availabilityOf(entry.backend);
    const reasons = reasonsOf(entry.backend, params, ctx);
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
    kernel: params.kernel,
  };
  return { backend: chosen, report };
}

/** Whether every rule passes; stops at the first failing (or throwing) one. `readsValues` picks one kind of rule. */
function passesRules(rules: readonly Rule[], params: SdpaParams, ctx: RuleContext): boolean {
  for (const r of rules) {
    try {
      if (r.check(params, ctx) !== null) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** The backend's rules for this call whose answer follows from the signature alone, and the others (Rule.readsValues). */
function splitRules(backend: Backend, params: SdpaParams): { fixed: Rule[]; valueRules: Rule[] } {
  const fixed: Rule[] = [];
  const valueRules: Rule[] = [];
  for (const r of rulesFor(backend, params)) (r.readsValues === true ? valueRules : fixed).push(r);
  return { fixed, valueRules };
}

/**
 * The call path's selection without a report: the same first candidate selectBackend chooses (same order,
 * availability, then every rule), but no report objects, reasons or describeCall strings are built and
 * rule checks stop at the first failure. Also returns the path it walked, for the call cache.
 */
function firstRunnable(
  params: SdpaParams,
  restriction: Restriction,
): { backend: Backend | null; selection: CachedSelection } {
  const all = listBackends(params.device.type);
  const ctx = ruleContext(params.device);
  const path: PathStep[] = [];
  const consider = (backend: Backend): boolean => {
    const { fixed, valueRules } = splitRules(backend, params);
    const staticPass = passesRules(fixed, params, ctx);
    path.push({ backend, staticPass, valueRules });
    return staticPass && availabilityOf(backend).available && passesRules(valueRules, params, ctx);
  };
  const selection = { names: restriction.names, ctx, path };
  if (restriction.names) {
    for (const n of restriction.names)
      for (const e of all) if (e.name === n && consider(e.backend)) return { backend: e.backend, selection };
    return { backend: null, selection };
  }
  for (const e of all) if (consider(e.backend)) return { backend: e.backend, selection };
  return { backend: null, selection };
}

function sameNames(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A cached path replayed for one call: availability and the readsValues rules are asked again, the
 * other rules' answers are the signature's. Null when no backend on the path runs now (the candidates
 * after it were never asked: full selection decides).
 */
function replayPath(sel: CachedSelection, params: SdpaParams): Backend | null {
  for (const step of sel.path) {
    if (!step.staticPass) continue;
    if (!availabilityOf(step.backend).available) continue;
    if (step.valueRules.length > 0 && !passesRules(step.valueRules, params, sel.ctx)) continue;
    return step.backend;
  }
  return null;
}

/**
 * The backend that runs the call, or NoBackendError with the full report. With the cache entry of the
 * call's signature, the path selection walked for it is replayed, and filled on first use.
 */
export function requireBackend(params: SdpaParams, restriction: Restriction, cached?: CacheEntry | null): Backend {
  if (cached) {
    const sel = cached.selection;
    if (sel && sameNames(sel.names, restriction.names)) {
      const replayed = replayPath(sel, params);
      if (replayed) return replayed;
    }
  }
  const { backend: fast, selection } = firstRunnable(params, restriction);
  // A path built without the device's properties is not kept: rules declined for want of them.
  if (cached && selection.ctx.device !== null) cached.selection = selection;
  if (fast) return fast;
  // When nothing is chosen the loop never stopped early, so the report already covers every candidate.
  const { backend, report } = selectBackend(params, restriction, false);
  if (backend) return backend;
  throw new NoBackendError(report);
}
