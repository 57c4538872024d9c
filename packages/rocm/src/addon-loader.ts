// Lazy, remembered loading of a package's native addon from build/Release/<name>.node. Shared by
// @attn/rocm and the ROCm backend packages. A missing or failing addon is never thrown at import
// time: the reason is kept and reported through availability(), explain and `attn doctor`.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export type AddonLoad<T> = { readonly ok: true; readonly addon: T } | { readonly ok: false; readonly reason: string };

export interface AddonSpec {
  /** Package name, for messages. */
  readonly packageName: string;
  /** Absolute path of the package root (the folder holding package.json and build/). */
  readonly packageRoot: string;
  /** File name without .node. */
  readonly addonName: string;
  /** Checks the loaded module's shape and version; returns why it is unusable, or null. */
  readonly validate?: (module: unknown) => string | null;
}

/** Loads once; later calls return the same result. */
export function loadAddon<T>(spec: AddonSpec): AddonLoad<T> {
  const build = join(spec.packageRoot, 'build');
  const skipped = join(build, 'SKIPPED');
  const file = join(build, 'Release', `${spec.addonName}.node`);
  const rebuild = `pnpm --filter ${spec.packageName} build:native`;
  if (existsSync(skipped)) {
    const why = readFileSync(skipped, 'utf8').trim();
    return { ok: false, reason: `${spec.packageName} was built without its native addon: ${why}; then run ${rebuild}` };
  }
  if (!existsSync(file)) {
    return { ok: false, reason: `${spec.packageName}'s native addon is not built (${file} is missing): run ${rebuild} on a machine with ROCm` };
  }
  let module: unknown;
  try {
    module = createRequire(join(spec.packageRoot, 'package.json'))(file);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: `loading ${file} failed: ${message}` };
  }
  const problem = spec.validate?.(module) ?? null;
  if (problem !== null) return { ok: false, reason: `${file} is unusable: ${problem}; rebuild it with ${rebuild}` };
  return { ok: true, addon: module as T };
}

/** A loader that tries once, on first use, and remembers the outcome. */
export function lazyAddon<T>(spec: AddonSpec): () => AddonLoad<T> {
  let result: AddonLoad<T> | undefined;
  return () => (result ??= loadAddon(spec));
}
