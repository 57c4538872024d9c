// Where NCCL is on this machine: found, never bundled. Two questions, answered separately:
// - build time: headers (nccl.h) and a library to link, for a native transport. In order:
//   NCCL_HOME; a wheel installed in a Python site-packages (nvidia/nccl, as pip installs it, PyTorch's
//   included); CUDA_HOME and /usr/local/cuda; the system include and library folders; last, the
//   nvidia-nccl-cu13 wheel the native build fetched from pip's configured index into the package's
//   build folder (the probe's `fetchedWheel`, see wheel.ts and scripts/nccl-build-paths.mjs).
// - run time: libnccl.so.2 as the dynamic loader finds it (LD_LIBRARY_PATH, then the ldconfig cache,
//   then the default folders), and the copies the loader does not search: a PyTorch install's in
//   site-packages/nvidia/nccl/lib, and the fetched wheel's, which an addon built against it loads
//   through its RPATH.
// Nothing is loaded: files are found and versions read (nccl.h's NCCL_MAJOR/MINOR/PATCH, the
// library's versioned file name, or the wheel's dist-info). Every folder tried is reported, so
// "none" says where it looked.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { findPackageRoot } from '@attn/native';

export type NcclSource =
  'NCCL_HOME' | 'site-packages' | 'CUDA_HOME' | 'system' | 'fetched-wheel' | 'LD_LIBRARY_PATH' | 'ldconfig';

export interface NcclBuild {
  readonly source: NcclSource;
  readonly includeDir: string;
  /** The library to link (libnccl.so, else libnccl.so.2). */
  readonly library: string;
  readonly version: string | null;
}

export interface NcclLibrary {
  readonly source: NcclSource;
  readonly path: string;
  readonly version: string | null;
}

export interface NcclReport {
  /** Headers and library for a native build, or null with `buildTried`. */
  readonly build: NcclBuild | null;
  readonly buildTried: readonly string[];
  /** libnccl.so.2 as the dynamic loader would load it, or null. */
  readonly runtime: NcclLibrary | null;
  /** Copies the loader does not search: a Python install's (PyTorch's nvidia/nccl/lib), the fetched wheel's. */
  readonly pythonCopies: readonly NcclLibrary[];
  readonly runtimeTried: readonly string[];
  /** One line for `attn doctor`. */
  readonly summary: string;
}

/** What the search reads from the machine; tests replace it. */
export interface NcclProbe {
  readonly env: Readonly<Record<string, string | undefined>>;
  exists(path: string): boolean;
  readText(path: string): string | null;
  list(dir: string): string[];
  realpath(path: string): string;
  /** Paths of libnccl.so.2 in the ldconfig cache. */
  ldconfigNccl(): string[];
  /** Python site-packages folders (the interpreter's, the user's). */
  sitePackages(): string[];
  /** Where the native build unpacks the wheel it fetches (<dir>/nvidia/nccl/{include,lib}), or null. */
  readonly fetchedWheel: string | null;
}

/** The package's build/nccl-wheel: where scripts/nccl-build-paths.mjs unpacks the fetched wheel. */
export function fetchedWheelDir(packageRoot: string): string {
  return join(packageRoot, 'build', 'nccl-wheel');
}

function run(cmd: string, args: string[]): string {
  try {
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    return r.status === 0 ? r.stdout : '';
  } catch {
    return '';
  }
}

export const systemProbe: NcclProbe = {
  env: process.env,
  exists: (p) => existsSync(p),
  readText: (p) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return null;
    }
  },
  list: (d) => {
    try {
      return readdirSync(d);
    } catch {
      return [];
    }
  },
  realpath: (p) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  },
  ldconfigNccl: () =>
    run('ldconfig', ['-p'])
      .split('\n')
      .map((l) => /^\s*libnccl\.so\.2\s.*=>\s*(\S+)/.exec(l)?.[1])
      .filter((p): p is string => p !== undefined),
  sitePackages: () => {
    const code = 'import site, sys; print("\\n".join(site.getsitepackages() + [site.getusersitepackages()]))';
    const fromPython = run('python3', ['-c', code])
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
    const env = process.env;
    const fromEnv = [env['VIRTUAL_ENV'], env['CONDA_PREFIX']]
      .filter((p): p is string => Boolean(p))
      .map((p) => join(p, 'lib'));
    return [...new Set([...fromPython, ...fromEnv])];
  },
  fetchedWheel: fetchedWheelDir(findPackageRoot(import.meta.url, '@attn/context-parallel')),
};

/** "2.30.7" from nccl.h's defines, or null. */
export function headerVersion(text: string | null): string | null {
  if (!text) return null;
  const v = (name: string) => new RegExp(`#define\\s+NCCL_${name}\\s+(\\d+)`).exec(text)?.[1];
  const [a, b, c] = [v('MAJOR'), v('MINOR'), v('PATCH')];
  return a && b && c ? `${a}.${b}.${c}` : null;
}

const SYSTEM_LIB_DIRS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/local/lib',
  '/usr/lib',
  '/lib64',
  '/lib',
];

/** The wheel's version from a sibling nvidia_nccl_cu*-X.Y.Z.dist-info, for a library in <site>/nvidia/nccl/lib. */
function distInfoVersion(probe: NcclProbe, site: string): string | null {
  for (const name of probe.list(site)) {
    const m = /^nvidia_nccl_cu\d+-(\d+\.\d+\.\d+)\.dist-info$/.exec(name);
    if (m) return m[1]!;
  }
  return null;
}

function libraryVersion(probe: NcclProbe, path: string): string | null {
  const m = /libnccl\.so\.(\d+\.\d+\.\d+)$/.exec(basename(probe.realpath(path)));
  if (m) return m[1]!;
  // <root>/lib/libnccl.so.2 next to <root>/include/nccl.h (NCCL_HOME, the wheel's nvidia/nccl).
  const fromHeader = headerVersion(probe.readText(join(dirname(dirname(path)), 'include', 'nccl.h')));
  if (fromHeader) return fromHeader;
  // <site>/nvidia/nccl/lib/libnccl.so.2
  return distInfoVersion(probe, dirname(dirname(dirname(dirname(path)))));
}

/** A root with include/nccl.h and lib[64]/libnccl.so[.2], or null. */
function buildAt(
  probe: NcclProbe,
  source: NcclSource,
  includeDir: string,
  libDirs: readonly string[],
  tried: string[],
): NcclBuild | null {
  tried.push(`${source}: ${includeDir}`);
  const header = join(includeDir, 'nccl.h');
  if (!probe.exists(header)) return null;
  for (const dir of libDirs) {
    for (const name of ['libnccl.so', 'libnccl.so.2']) {
      const library = join(dir, name);
      if (probe.exists(library)) return { source, includeDir, library, version: headerVersion(probe.readText(header)) };
    }
  }
  tried[tried.length - 1] += ' (nccl.h but no libnccl.so in ' + libDirs.join(', ') + ')';
  return null;
}

function findBuild(probe: NcclProbe, tried: string[]): NcclBuild | null {
  const env = probe.env;
  const roots: [NcclSource, string][] = [];
  if (env['NCCL_HOME']) roots.push(['NCCL_HOME', env['NCCL_HOME']]);
  for (const site of probe.sitePackages()) roots.push(['site-packages', join(site, 'nvidia', 'nccl')]);
  for (const cuda of [env['CUDA_HOME'], '/usr/local/cuda']) if (cuda) roots.push(['CUDA_HOME', cuda]);
  const at = (source: NcclSource, root: string) =>
    buildAt(probe, source, join(root, 'include'), [join(root, 'lib'), join(root, 'lib64')], tried);
  for (const [source, root] of roots) {
    const found = at(source, root);
    if (found) return found;
  }
  const system = buildAt(probe, 'system', '/usr/include', SYSTEM_LIB_DIRS, tried);
  if (system) return system;
  return probe.fetchedWheel ? at('fetched-wheel', join(probe.fetchedWheel, 'nvidia', 'nccl')) : null;
}

function findRuntime(probe: NcclProbe, tried: string[]): NcclLibrary | null {
  const candidates: [NcclSource, string][] = [
    ...(probe.env['LD_LIBRARY_PATH'] ?? '')
      .split(':')
      .filter(Boolean)
      .map((d): [NcclSource, string] => ['LD_LIBRARY_PATH', join(d, 'libnccl.so.2')]),
    ...probe.ldconfigNccl().map((p): [NcclSource, string] => ['ldconfig', p]),
    ...SYSTEM_LIB_DIRS.map((d): [NcclSource, string] => ['system', join(d, 'libnccl.so.2')]),
  ];
  for (const [source, path] of candidates) {
    tried.push(`${source}: ${path}`);
    if (probe.exists(path)) return { source, path, version: libraryVersion(probe, path) };
  }
  return null;
}

function findPythonCopies(probe: NcclProbe, tried: string[]): NcclLibrary[] {
  const out: NcclLibrary[] = [];
  for (const site of probe.sitePackages()) {
    const path = join(site, 'nvidia', 'nccl', 'lib', 'libnccl.so.2');
    tried.push(`site-packages: ${path}`);
    if (probe.exists(path))
      out.push({ source: 'site-packages', path, version: distInfoVersion(probe, site) ?? libraryVersion(probe, path) });
  }
  if (probe.fetchedWheel) {
    const path = join(probe.fetchedWheel, 'nvidia', 'nccl', 'lib', 'libnccl.so.2');
    tried.push(`fetched-wheel: ${path}`);
    if (probe.exists(path))
      out.push({
        source: 'fetched-wheel',
        path,
        version: distInfoVersion(probe, probe.fetchedWheel) ?? libraryVersion(probe, path),
      });
  }
  return out;
}

function summaryOf(build: NcclBuild | null, runtime: NcclLibrary | null, copies: readonly NcclLibrary[]): string {
  const v = (x: { version: string | null }) => (x.version ? ` ${x.version}` : '');
  const parts = [
    runtime
      ? `runtime libnccl.so.2${v(runtime)} at ${runtime.path} (${runtime.source})`
      : 'runtime: no libnccl.so.2 on the loader path',
    ...copies
      .filter((c) => c.path !== runtime?.path)
      .map((c) => `${c.source === 'fetched-wheel' ? 'fetched wheel' : 'Python'} copy${v(c)} at ${c.path}`),
    build
      ? `build: nccl.h${v(build)} in ${build.includeDir} (${build.source})`
      : 'build: no nccl.h + libnccl (set NCCL_HOME, or let the native build fetch the nvidia-nccl-cu13 wheel: it needs python3 -m pip and an index that has it)',
  ];
  return parts.join('; ');
}

/** Finds NCCL for a build and for running; never throws. */
export function findNccl(given: NcclProbe = systemProbe): NcclReport {
  let sites: string[] | null = null;
  // One Python query for both searches.
  const probe: NcclProbe = { ...given, sitePackages: () => (sites ??= given.sitePackages()) };
  const buildTried: string[] = [];
  const runtimeTried: string[] = [];
  const build = findBuild(probe, buildTried);
  const runtime = findRuntime(probe, runtimeTried);
  const pythonCopies = findPythonCopies(probe, runtimeTried);
  return { build, buildTried, runtime, pythonCopies, runtimeTried, summary: summaryOf(build, runtime, pythonCopies) };
}
