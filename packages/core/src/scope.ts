// sdpaKernel(names, fn): restricts (and orders) the backends for every sdpa call made inside fn,
// including after awaits, through AsyncLocalStorage (shared by every copy of core).
//
// Nesting follows PyTorch's sdpa_kernel: the inner scope REPLACES the outer one (PyTorch sets the
// enabled flags to exactly the listed backends), it does not intersect with it. The list order is
// the order backends are tried (PyTorch's set_priority=True), so ['cpu-math', 'cpu-flash'] tries
// cpu-math first. A per-call `backends` option replaces the scope for that call the same way.
import { AttnInputError } from './errors.js';
import { checkBackendNames } from './registry.js';
import { registryState } from './registry-state.js';

/** Runs fn with only `names` allowed; returns fn's result (a Promise stays a Promise). Restores on throw. */
export function sdpaKernel<T>(names: readonly string[], fn: () => T): T {
  const backends = checkBackendNames(names, 'sdpaKernel(names)');
  if (typeof fn !== 'function')
    throw new AttnInputError('ATTN_OPTION', 'sdpaKernel(names, fn): fn must be a function.');
  return registryState().scope.run({ backends }, fn);
}

/** The backends of the innermost enclosing sdpaKernel scope, or null outside any scope. */
export function currentKernelScope(): readonly string[] | null {
  return registryState().scope.getStore()?.backends ?? null;
}
