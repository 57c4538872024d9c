// Loads the backend and device packages that are installed. Each registers itself with core on import;
// a package that is not installed is reported as such, never an error.
import { createRequire } from 'node:module';

/** Device runtimes first: kernel packages use their memory. */
export const KNOWN_PACKAGES = [
  { name: '@attn/cpu', kind: 'backend', device: 'cpu' },
  { name: '@attn/cuda', kind: 'runtime', device: 'cuda' },
  { name: '@attn/flash-cuda', kind: 'backend', device: 'cuda' },
  { name: '@attn/cutlass-memeff', kind: 'backend', device: 'cuda' },
  { name: '@attn/rocm', kind: 'runtime', device: 'rocm' },
  { name: '@attn/rocm-aotriton', kind: 'backend', device: 'rocm' },
  { name: '@attn/rocm-ck', kind: 'backend', device: 'rocm' },
] as const;

export type PackageName = (typeof KNOWN_PACKAGES)[number]['name'];

export type PackageStatus =
  | {
      readonly name: string;
      readonly state: 'loaded';
      readonly version: string | null;
      readonly module: Record<string, unknown>;
    }
  | { readonly name: string; readonly state: 'not installed' }
  | { readonly name: string; readonly state: 'failed'; readonly error: string };

/** True when `err` says that `name` itself cannot be found (not one of its own imports). */
export function isMissingPackage(err: unknown, name: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  const msg = err.message;
  const mentions =
    msg.includes(`'${name}'`) || msg.includes(`"${name}"`) || msg.includes(`url ${name}`) || msg.includes(` ${name} `);
  const notFound =
    code === 'ERR_MODULE_NOT_FOUND' ||
    code === 'MODULE_NOT_FOUND' ||
    /Cannot find (package|module)|Failed to (load|resolve)/.test(msg);
  return mentions && notFound;
}

function versionOf(name: string): string | null {
  try {
    const req = createRequire(import.meta.url);
    const pkg = req(`${name}/package.json`) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

export type Importer = (name: string) => Promise<unknown>;

const defaultImporter: Importer = (name) => import(name);

let loaded: Promise<PackageStatus[]> | null = null;

/** Imports every known package once per process (in order); later calls get the same answer. */
export function loadPackages(importer: Importer = defaultImporter): Promise<PackageStatus[]> {
  loaded ??= importAll(importer);
  return loaded;
}

export async function importAll(importer: Importer): Promise<PackageStatus[]> {
  const out: PackageStatus[] = [];
  for (const { name } of KNOWN_PACKAGES) out.push(await importOne(name, importer));
  return out;
}

async function importOne(name: string, importer: Importer): Promise<PackageStatus> {
  try {
    const module = (await importer(name)) as Record<string, unknown>;
    return { name, state: 'loaded', version: versionOf(name), module };
  } catch (err) {
    if (isMissingPackage(err, name)) return { name, state: 'not installed' };
    return { name, state: 'failed', error: loadError(err, name) };
  }
}

/** The import error, or "not built" when the package is linked but its dist/ is missing. */
export function loadError(err: unknown, name: string): string {
  const msg = err instanceof Error ? err.message : String(err);
  const dist = /Cannot find module '([^']*\/dist\/[^']*)'/.exec(msg);
  if (dist) return `not built: ${dist[1]} is missing; run \`pnpm exec nx run ${name}:build\` (or \`pnpm build\`).`;
  return msg;
}

/** The loaded module of a package, or null. */
export function moduleOf(statuses: readonly PackageStatus[], name: PackageName): Record<string, unknown> | null {
  const s = statuses.find((p) => p.name === name);
  return s?.state === 'loaded' ? s.module : null;
}

/** The loaded device-runtime package of a device ('cuda' -> @attn/cuda), or null (CPU, not installed). */
export function runtimeModuleFor(
  statuses: readonly PackageStatus[],
  device: string | { type: string },
): Record<string, unknown> | null {
  const type = typeof device === 'string' ? device.split(':')[0] : device.type;
  if (type === 'cuda') return moduleOf(statuses, '@attn/cuda');
  if (type === 'rocm') return moduleOf(statuses, '@attn/rocm');
  return null;
}
