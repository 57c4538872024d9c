// The process-wide registry state. It lives on globalThis under a registered symbol so that two
// copies of @attn/core in one process (a backend resolving its own copy, dist next to src in a
// test) see the same backends, runtimes and sdpaKernel scope.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DeviceType } from './device.js';
import { AttnError } from './errors.js';
import type { DeviceRuntime } from './storage.js';

export const REGISTRY_SYMBOL = Symbol.for('@attn/core/registry');

/** Bump when the shape below changes incompatibly; a copy that finds another version refuses it. */
export const REGISTRY_VERSION = 2;

/**
 * One registered backend. The backend's type is a parameter (registry.ts, the only writer, fixes it
 * to Backend) so that this module, which the device layer loads (tensor -> device-io ->
 * device-registry -> here), does not depend on Backend and through it on Tensor.
 */
export interface BackendSlot<B = unknown> {
  backend: B;
  priority: number;
  /** Set by setBackendPriority: survives the backend being registered again. */
  userPriority: boolean;
  /** Registration order: breaks priority ties, first registered first. */
  seq: number;
}

/** What an sdpaKernel scope holds: the backends allowed, in the order to try them. */
export interface ScopeFrame {
  readonly backends: readonly string[];
}

/** The shared state; B is the backends' type (see BackendSlot). */
export interface RegistryState<B = unknown> {
  readonly version: number;
  readonly backends: Map<string, BackendSlot<B>>;
  readonly runtimes: Map<DeviceType, DeviceRuntime>;
  readonly scope: AsyncLocalStorage<ScopeFrame>;
  seq: number;
  /**
   * Bumped by every change selection depends on (a backend registered, replaced or removed, a
   * priority changed, a device runtime registered or removed): cached selections of an older
   * generation are stale (call-cache.ts).
   */
  generation: number;
}

export function createRegistryState(): RegistryState {
  return {
    version: REGISTRY_VERSION,
    backends: new Map(),
    runtimes: new Map(),
    scope: new AsyncLocalStorage(),
    seq: 0,
    generation: 0,
  };
}

type GlobalWithRegistry = typeof globalThis & { [REGISTRY_SYMBOL]?: RegistryState };

/** The shared state, created by whichever copy of core asks first. Looked up on every call (tests swap it). */
export function registryState(): RegistryState {
  const g = globalThis as GlobalWithRegistry;
  let state = g[REGISTRY_SYMBOL];
  if (!state) {
    state = createRegistryState();
    Object.defineProperty(g, REGISTRY_SYMBOL, { value: state, writable: true, configurable: true, enumerable: false });
  }
  if (state.version !== REGISTRY_VERSION) {
    throw new AttnError(
      'ATTN_CORE_VERSION',
      `Two incompatible copies of @attn/core are loaded (registry version ${state.version} and ${REGISTRY_VERSION}); ` +
        'install one version of @attn/core (backends take it as a peer dependency).',
    );
  }
  return state;
}

/** Replaces the shared state (tests). Returns the previous one. */
export function swapRegistryState(next: RegistryState): RegistryState {
  const prev = registryState();
  (globalThis as GlobalWithRegistry)[REGISTRY_SYMBOL] = next;
  return prev;
}
