// Builds one addon package's native code with cmake-js: from the monorepo (`build:native`) and, for
// users, where no prebuilt binary fits (`npx @attn/native build @attn/flash-cuda`). The same steps
// either way: find the compilers, the build tools and the dependency folders, configure afresh when
// the configuration changed, compile with progress, and, inside the monorepo, copy the addon into
// the package's prebuilt platform package (npm/<platform>/) so that the loader's first choice and
// what CI publishes are this build.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { nativeConfig, readPackageJson } from '../package-json.js';
import { platformTag } from '../platform.js';
import { cudaArchs } from './archs.js';
import { buildTools } from './build-tools.js';
import { dependencyDirs } from './dependencies.js';
import { findToolchain } from './toolchain.js';

export interface BuildOptions {
  /** The addon package's folder. */
  readonly packageRoot: string;
  /** CUDA archs: a list ('80;90a'), 'default' or 'release'; else $ATTN_CUDA_ARCHS, else the default. */
  readonly archs?: string;
  /** Parallel compile jobs; else $ATTN_BUILD_JOBS, else the CPU count. */
  readonly jobs?: number;
  /** A debug build with line info; else $ATTN_NATIVE_DEBUG=1. */
  readonly debug?: boolean;
  /** A missing compiler is recorded in build/SKIPPED and the build succeeds without an addon. */
  readonly skipWithoutToolchain?: boolean;
  readonly log?: (line: string) => void;
  readonly env?: NodeJS.ProcessEnv;
}

export type BuildResult =
  | {
      readonly status: 'built';
      readonly addon: string;
      readonly bytes: number;
      readonly seconds: number;
      readonly copiedTo: string | null;
    }
  | { readonly status: 'skipped'; readonly reason: string };

export class NativeBuildError extends Error {
  readonly code = 'ATTN_NATIVE_BUILD';
}

function mb(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

export function buildAddon(options: BuildOptions): BuildResult {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.log(line));
  const root = options.packageRoot;
  const pkg = readPackageJson(root);
  const config = nativeConfig(pkg);
  const buildDir = join(root, 'build');
  const say = (line: string) => log(`${pkg.name}: ${line}`);

  const found = findToolchain(config.toolchain, env);
  if (!found.ok) {
    if (!options.skipWithoutToolchain)
      throw new NativeBuildError(`${pkg.name}: cannot build from source: ${found.reason}`);
    mkdirSync(buildDir, { recursive: true });
    writeFileSync(join(buildDir, 'SKIPPED'), `${found.reason}\n`);
    say(`native build skipped: ${found.reason}`);
    return { status: 'skipped', reason: found.reason };
  }
  const tools = buildTools(root, say, env);
  const defines: Record<string, string> = {
    ...found.toolchain.defines,
    ...dependencyDirs(root),
    ATTN_NODE_ADDON_API_DIR: tools.nodeAddonApiInclude,
  };
  let archNote = '';
  if (config.toolchain === 'nvcc') {
    defines.ATTN_CUDA_ARCHS = cudaArchs(options.archs, env);
    archNote = `CUDA archs ${defines.ATTN_CUDA_ARCHS}`;
  } else if (config.toolchain === 'hipcc' && (options.archs ?? env.ATTN_ROCM_ARCHS)) {
    defines.ATTN_ROCM_ARCHS = (options.archs ?? env.ATTN_ROCM_ARCHS)!.replaceAll(',', ';');
    archNote = `ROCm archs ${defines.ATTN_ROCM_ARCHS}`;
  } else if (config.toolchain === 'hipcc') {
    archNote = 'ROCm archs: the default list';
  }
  const debug = options.debug ?? env.ATTN_NATIVE_DEBUG === '1';
  const jobs = options.jobs ?? (Number(env.ATTN_BUILD_JOBS) || availableParallelism());

  // cmake-js keeps a configured build folder and would silently keep its old arch list or build
  // type; start afresh whenever what we configure with differs from last time.
  const marker = join(buildDir, 'attn-config.json');
  const configKey = JSON.stringify({ defines, debug });
  if (existsSync(buildDir) && (!existsSync(marker) || readFileSync(marker, 'utf8') !== configKey)) {
    rmSync(buildDir, { recursive: true, force: true });
  }
  say(
    `building ${config.addon}.node (${[archNote, debug ? 'debug' : 'release', `${jobs} jobs`].filter(Boolean).join(', ')})`,
  );
  say(`with ${found.toolchain.description}; cmake-js and node-addon-api from ${tools.from}`);
  const started = Date.now();
  const args = [
    tools.cmakeJs,
    'compile',
    ...(debug ? ['--debug'] : []),
    ...Object.entries(defines).map(([k, v]) => `--CD${k}=${v}`),
  ];
  const r = spawnSync(process.execPath, args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...env, CMAKE_BUILD_PARALLEL_LEVEL: String(jobs) },
  });
  const skipped = join(buildDir, 'SKIPPED');
  if (r.status === 0 && existsSync(skipped)) {
    // The CMakeLists itself skipped (a ROCm library it needs is missing): it wrote why.
    const reason = readFileSync(skipped, 'utf8').trim();
    if (!options.skipWithoutToolchain) throw new NativeBuildError(`${pkg.name}: cannot build from source: ${reason}`);
    return { status: 'skipped', reason };
  }
  const addon = join(buildDir, debug ? 'Debug' : 'Release', `${config.addon}.node`);
  if (r.status !== 0 || !existsSync(addon)) {
    throw new NativeBuildError(
      `${pkg.name}: native build failed (exit ${r.status ?? r.signal}); see the compiler output above`,
    );
  }
  writeFileSync(marker, configKey);
  const seconds = (Date.now() - started) / 1000;
  const bytes = statSync(addon).size;
  say(`built ${addon} (${mb(bytes)}) in ${seconds.toFixed(0)} s`);
  const copiedTo = copyIntoPlatformPackage(root, addon, say);
  return { status: 'built', addon, bytes, seconds, copiedTo };
}

/**
 * Inside the monorepo, each addon package keeps its prebuilt platform packages in npm/<tag>/; the
 * one for this machine gets the addon just built. A published package has no npm/ folder.
 */
function copyIntoPlatformPackage(root: string, addon: string, say: (line: string) => void): string | null {
  const dir = join(root, 'npm', platformTag());
  if (!existsSync(join(dir, 'package.json'))) return null;
  const target = join(dir, basename(addon));
  copyFileSync(addon, target);
  say(`copied into ${target} (the prebuilt package ${readPackageJson(dir).name})`);
  return target;
}
