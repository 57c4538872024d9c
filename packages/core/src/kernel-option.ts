// The `kernel` call option: a kernel family declared by a backend (Backend.kernels). A name implies
// the backends that declare it (with `backends` given, those of them that do); selection then asks
// each one's kernel check beside its rules (kernelRule), so a kernel that cannot run the call is a
// reason in the report, never a silent fallback to another kernel or backend.
import type { Backend, KernelChoice, Rule } from './backend.js';
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';
import type { SdpaParams } from './params.js';
import { float8InputsRule } from './float8-rule.js';
import { listBackends } from './registry.js';

/** Every registered backend's kernel names, as 'backend: a, b' lines joined by '; ' (for messages). */
export function kernelCatalog(backends: Iterable<Backend>): string {
  const parts: string[] = [];
  for (const b of backends)
    if (b.kernels && b.kernels.length > 0) parts.push(`${b.name}: ${b.kernels.map((k) => k.name).join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : '(no registered backend declares kernels)';
}

export function kernelOf(backend: Backend, name: string): KernelChoice | undefined {
  return backend.kernels?.find((k) => k.name === name);
}

/**
 * Checks the option and narrows the call's restriction to the backends that declare the kernel: the
 * given list's order when there is one, else every declaring backend (selection orders them by
 * priority). Throws AttnInputError (ATTN_UNKNOWN_KERNEL) naming the valid kernels.
 */
export function resolveKernel(
  kernel: unknown,
  backends: readonly string[] | null,
): { kernel: string | null; backends: readonly string[] | null } {
  if (kernel === undefined || kernel === null) return { kernel: null, backends };
  const all = listBackends().map((e) => e.backend);
  if (typeof kernel !== 'string' || kernel === '') {
    throw new AttnInputError(
      'ATTN_UNKNOWN_KERNEL',
      `kernel must be a kernel name, got ${describeValue(kernel)}; kernels: ${kernelCatalog(all)}.`,
    );
  }
  const pool = backends ? all.filter((b) => backends.includes(b.name)) : all;
  const owners = pool.filter((b) => kernelOf(b, kernel) !== undefined).map((b) => b.name);
  if (owners.length === 0) {
    const where = backends ? ` among backends ${backends.join(', ')}` : '';
    throw new AttnInputError(
      'ATTN_UNKNOWN_KERNEL',
      `No kernel named ${JSON.stringify(kernel)}${where}; kernels: ${kernelCatalog(pool.length > 0 ? pool : all)}. Leave kernel out to let the backend choose.`,
    );
  }
  return { kernel, backends: backends ? backends.filter((n) => owners.includes(n)) : owners };
}

const kernelRules = new WeakMap<Backend, Rule>();

/**
 * The rule selection adds to a backend's own for calls with a kernel: the backend declares it, and
 * the kernel's check passes. Its answer follows from the signature (the option is part of the call
 * cache's key). One object per backend, so the call cache's path steps can hold it.
 */
export function kernelRule(backend: Backend): Rule {
  let r = kernelRules.get(backend);
  if (!r) {
    r = {
      name: 'kernel',
      check(p: SdpaParams, ctx) {
        if (p.kernel === null) return null;
        const k = kernelOf(backend, p.kernel);
        const names = (backend.kernels ?? []).map((c) => c.name).join(', ') || 'none';
        if (!k)
          return `Has no kernel ${JSON.stringify(p.kernel)} (its kernels: ${names}); drop kernel or name one of these.`;
        const why = k.check ? k.check(p, ctx) : null;
        return why === null
          ? null
          : `Kernel ${JSON.stringify(p.kernel)} cannot run this call: ${why} (its kernels: ${names}; leave kernel out to let it choose).`;
      },
    };
    kernelRules.set(backend, r);
  }
  return r;
}

/**
 * The rules selection checks for this call: float8Inputs first when the inputs are float8_e4m3 and the
 * backend does not take them (float8-rule.ts), the backend's own, then the kernel rule when the call
 * names one.
 */
export function rulesFor(backend: Backend, params: SdpaParams): readonly Rule[] {
  const float8 = params.descale !== null && backend.float8Inputs !== true;
  if (!float8 && params.kernel === null) return backend.rules;
  const rules = float8 ? [float8InputsRule(backend), ...backend.rules] : [...backend.rules];
  if (params.kernel !== null) rules.push(kernelRule(backend));
  return rules;
}
