// Process warnings that are printed once per process (as PyTorch's TORCH_WARN_ONCE), even when two
// copies of this package are loaded: the set lives on globalThis.
const KEY = Symbol.for('@attn/rocm/warned');

type GlobalWithWarned = typeof globalThis & { [KEY]?: Set<string> };

function warned(): Set<string> {
  const g = globalThis as GlobalWithWarned;
  g[KEY] ??= new Set();
  return g[KEY];
}

/** Emits `message` as a process warning with `code`, the first time `key` is seen. Returns whether it did. */
export function warnOnce(key: string, code: string, message: string): boolean {
  const seen = warned();
  if (seen.has(key)) return false;
  seen.add(key);
  process.emitWarning(message, { code });
  return true;
}

/** Forgets which warnings were printed (tests). */
export function resetWarnOnce(): void {
  warned().clear();
}
