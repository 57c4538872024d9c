// cmake-js and node-addon-api: build tools, never needed at run time, so no published package
// depends on them. In the monorepo they are devDependencies of each addon package; a user's source
// build installs the versions pinned in @attn/native's package.json ("buildTools") into a cache
// folder once, with npm from the same registry the user installs from.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { findPackageRoot, readPackageJson } from '../package-json.js';

export interface BuildTools {
  /** cmake-js's command-line script. */
  readonly cmakeJs: string;
  /** node-addon-api's include folder (napi.h). */
  readonly nodeAddonApiInclude: string;
  /** 'the package's devDependencies' or the cache folder used. */
  readonly from: string;
}

type Log = (line: string) => void;

function resolveFrom(dir: string): BuildTools | null {
  try {
    const req = createRequire(join(dir, 'package.json'));
    const cmakeJs = req.resolve('cmake-js/bin/cmake-js');
    // napi.h sits at the package's root (its include_dir is relative to the working directory).
    const include = dirname(req.resolve('node-addon-api/package.json'));
    return existsSync(join(include, 'napi.h')) ? { cmakeJs, nodeAddonApiInclude: include, from: dir } : null;
  } catch {
    return null;
  }
}

/** The versions @attn/native pins for source builds (its package.json's "buildTools"). */
export function pinnedBuildTools(): Record<string, string> {
  const pkg = readPackageJson(findPackageRoot(import.meta.url, '@attn/native')) as {
    buildTools?: Record<string, string>;
  };
  if (!pkg.buildTools) throw new Error("@attn/native's package.json has no buildTools field");
  return pkg.buildTools;
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'attn', 'build-tools');
}

/** npm itself: the one running this command under npx/npm exec, else the one on PATH. */
function npmCommand(env: NodeJS.ProcessEnv): { cmd: string; args: string[] } {
  const execpath = env.npm_execpath;
  if (execpath && /npm-cli\.js$/.test(execpath)) return { cmd: process.execPath, args: [execpath] };
  return { cmd: 'npm', args: [] };
}

/** The build tools for the package at `root`: its own, or a cached install (made on first use). */
export function buildTools(root: string, log: Log, env: NodeJS.ProcessEnv = process.env): BuildTools {
  const own = resolveFrom(root);
  if (own) return { ...own, from: `${root}'s devDependencies` };
  const pins = pinnedBuildTools();
  const specs = Object.entries(pins).map(([name, version]) => `${name}@${version}`);
  const dir = join(cacheDir(env), specs.join('+').replaceAll('/', '_'));
  const cached = resolveFrom(dir);
  if (cached) return { ...cached, from: dir };
  mkdirSync(dir, { recursive: true });
  log(`installing the build tools (${specs.join(', ')}) into ${dir}`);
  const npm = npmCommand(env);
  const r = spawnSync(
    npm.cmd,
    [
      ...npm.args,
      'install',
      '--prefix',
      dir,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      ...specs,
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env,
    },
  );
  const installed = resolveFrom(dir);
  if (r.status !== 0 || !installed) {
    throw new Error(
      `installing ${specs.join(', ')} with npm failed (exit ${r.status ?? r.signal}); see npm's output above`,
    );
  }
  return { ...installed, from: dir };
}
