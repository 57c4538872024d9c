// One loader for every attn addon. It tries, in order:
//   1. the prebuilt platform package (`@attn/cpu-linux-x64-gnu/cpu_flash.node`), which the backend
//      lists in optionalDependencies so that npm installs only the one matching this machine;
//   2. a local build (`<package>/build/Release/cpu_flash.node`), made by `npx @attn/native build`
//      where no prebuilt fits, or by the monorepo's build.
// It never throws: a failure becomes a reason that says what was looked for and the npm command
// that fixes it, shown by availability(), explain and `attn doctor`. Reasons never start with
// 'unavailable:': whoever prints one says that once.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { nativeConfig, readPackageJson, type PackageJson } from './package-json.js';
import { platformTag, prebuiltPackageName } from './platform.js';

export interface NativeAddonSpec {
  /** The folder holding the addon package's package.json (see findPackageRoot). */
  readonly packageRoot: string;
  /** Functions the addon must export; a binary lacking one is from another version. */
  readonly requiredFunctions?: readonly string[];
  /** Further checks of the loaded module (versions it was built against): why it is unusable, or null. */
  readonly validate?: (module: unknown) => string | null;
  /** Tests: the platform tag (default: this machine's) and the require used to load. */
  readonly platform?: string;
  readonly requireFn?: NodeJS.Require;
}

export type AddonOrigin = 'prebuilt' | 'local build';

export type NativeAddonLoad<T> =
  | { readonly ok: true; readonly addon: T; readonly path: string; readonly origin: AddonOrigin }
  | { readonly ok: false; readonly reason: string; readonly looked: readonly string[] };

function message(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0]! : String(e);
}

interface Attempt {
  /** What was looked for, and what was found there: for the reason. */
  readonly note: string;
  readonly load?: { readonly addon: unknown; readonly path: string };
}

function tryLoad(path: string, spec: NativeAddonSpec, requireFn: NodeJS.Require): Attempt {
  let module: unknown;
  try {
    module = requireFn(path);
  } catch (e) {
    return { note: `${path} failed to load (${message(e)})` };
  }
  const missing = (spec.requiredFunctions ?? []).filter(
    (f) => typeof (module as Record<string, unknown>)[f] !== 'function',
  );
  if (missing.length > 0) return { note: `${path} is from another version (it lacks ${missing.join(', ')})` };
  let problem: string | null;
  try {
    problem = spec.validate?.(module) ?? null;
  } catch (e) {
    problem = `its version check threw: ${message(e)}`;
  }
  if (problem !== null) return { note: `${path} is unusable: ${problem}` };
  return { note: path, load: { addon: module, path } };
}

function prebuiltAttempt(
  pkg: PackageJson,
  file: string,
  prebuilt: string,
  spec: NativeAddonSpec,
  requireFn: NodeJS.Require,
): Attempt {
  let dir: string;
  try {
    dir = dirname(createRequire(join(spec.packageRoot, 'package.json')).resolve(`${prebuilt}/package.json`));
  } catch {
    return { note: `${prebuilt} is not installed` };
  }
  const path = join(dir, file);
  if (!existsSync(path)) return { note: `${prebuilt} is installed without ${file}` };
  return tryLoad(path, spec, requireFn);
}

function localAttempt(file: string, spec: NativeAddonSpec, requireFn: NodeJS.Require): Attempt {
  const path = join(spec.packageRoot, 'build', 'Release', file);
  if (existsSync(path)) return tryLoad(path, spec, requireFn);
  // The build records why it skipped (no nvcc, no cmake): the precise reason.
  const skipped = join(spec.packageRoot, 'build', 'SKIPPED');
  const why = existsSync(skipped) ? readFileSync(skipped, 'utf8').trim() : '';
  return { note: `${path} was not built${why ? ` (${why})` : ''}` };
}

/** The npm command that gets a working addon here. */
function fix(pkg: PackageJson, prebuilt: string, tag: string, requires: string): string {
  const build = `\`npx @attn/native build ${pkg.name}\` (needs ${requires})`;
  if (pkg.optionalDependencies?.[prebuilt] !== undefined) {
    return `install the prebuilt binary with \`npm install ${prebuilt}@${pkg.version}\`, or build from source with ${build}`;
  }
  return `no prebuilt binary is published for ${tag}; build from source with ${build}`;
}

/** Loads the addon of the package at spec.packageRoot; never throws. */
export function loadNativeAddon<T>(spec: NativeAddonSpec): NativeAddonLoad<T> {
  let pkg: PackageJson;
  let file: string;
  let requires: string;
  try {
    pkg = readPackageJson(spec.packageRoot);
    const config = nativeConfig(pkg);
    file = `${config.addon}.node`;
    requires = config.requires;
  } catch (e) {
    return { ok: false, reason: `cannot read the package's native config: ${message(e)}`, looked: [] };
  }
  const tag = spec.platform ?? platformTag();
  const prebuilt = prebuiltPackageName(pkg.name, tag);
  const requireFn = spec.requireFn ?? createRequire(join(spec.packageRoot, 'package.json'));
  const attempts: Attempt[] = [];
  for (const attempt of [
    () => prebuiltAttempt(pkg, file, prebuilt, spec, requireFn),
    () => localAttempt(file, spec, requireFn),
  ]) {
    const a = attempt();
    if (a.load)
      return {
        ok: true,
        addon: a.load.addon as T,
        path: a.load.path,
        origin: attempts.length === 0 ? 'prebuilt' : 'local build',
      };
    attempts.push(a);
  }
  const looked = attempts.map((a) => a.note);
  return {
    ok: false,
    looked,
    reason: `no native addon: ${looked.join('; ')}. Fix: ${fix(pkg, prebuilt, tag, requires)}`,
  };
}

/** A loader that tries once, on first use, and remembers the outcome for the process. */
export function lazyNativeAddon<T>(spec: NativeAddonSpec): () => NativeAddonLoad<T> {
  let result: NativeAddonLoad<T> | undefined;
  return () => (result ??= loadNativeAddon<T>(spec));
}
