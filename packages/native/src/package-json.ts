// What the loader and the source build read from an addon package's package.json.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `attnNative` field of an addon package: what its addon is and what building it needs. */
export interface NativeConfig {
  /** The addon's file name without '.node' (build/Release/<addon>.node, <prebuilt>/<addon>.node). */
  readonly addon: string;
  /** The compiler family its build needs: plain C++, CUDA or ROCm. */
  readonly toolchain: 'cxx' | 'nvcc' | 'hipcc';
  /** For messages: what a source build needs, e.g. 'cmake and a C++17 compiler'. */
  readonly requires: string;
}

export interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly attnNative?: NativeConfig;
}

export function readPackageJson(root: string): PackageJson {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
}

/**
 * The folder of the package named `name` that holds `fromFile` (a module's import.meta.url or path):
 * the nearest folder up with that package.json. Works from src/ (sources) and dist/ (build) alike.
 */
export function findPackageRoot(fromFile: string, name: string): string {
  const start = dirname(fromFile.startsWith('file:') ? fileURLToPath(fromFile) : fromFile);
  for (let dir = start; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === name) return dir;
      } catch {
        // not a package.json we can read; keep looking up
      }
    }
    if (dirname(dir) === dir) throw new Error(`no package.json named ${name} above ${start}`);
  }
}

/** The `attnNative` field, checked; throws with what is wrong (a packaging bug, not a user error). */
export function nativeConfig(pkg: PackageJson): NativeConfig {
  const c = pkg.attnNative;
  if (
    !c ||
    typeof c.addon !== 'string' ||
    !['cxx', 'nvcc', 'hipcc'].includes(c.toolchain) ||
    typeof c.requires !== 'string'
  ) {
    throw new Error(
      `${pkg.name}'s package.json has no valid "attnNative" field ({ addon, toolchain: cxx|nvcc|hipcc, requires })`,
    );
  }
  return c;
}
