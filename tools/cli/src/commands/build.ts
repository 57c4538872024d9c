// `attn build --backend flash-cuda`: the source build of a backend's native addon, for machines where
// no prebuilt binary fits (another OS, CPU or C library, or a GPU arch the prebuilt lacks). The same
// build as `npx @attn/native build <package>`; this maps backend names to their packages.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildAddon, resolvePackage } from '@attn/native/build';
import { Command, Option } from 'commander';
import { CliUsageError } from '../errors.js';
import { println } from '../io.js';
import type { CliIO } from '../io.js';

/** Backend (or runtime) name -> the package whose addon it runs on, in build order. */
export const BUILDABLE: Readonly<Record<string, readonly string[]>> = {
  'cpu-flash': ['@attn/cpu'],
  cuda: ['@attn/cuda'],
  'flash-cuda': ['@attn/cuda', '@attn/flash-cuda'],
  'memeff-cuda': ['@attn/cuda', '@attn/cutlass-memeff'],
  'cuda-math': ['@attn/cuda'],
  rocm: ['@attn/rocm'],
  aotriton: ['@attn/rocm', '@attn/rocm-aotriton'],
  ck: ['@attn/rocm', '@attn/rocm-ck'],
};

/** The packages to build for `--backend` names (or package names), runtimes first, each once. */
export function packagesFor(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const pkgs = BUILDABLE[name] ?? (name.startsWith('@attn/') ? [name] : null);
    if (!pkgs)
      throw new CliUsageError(
        `Unknown backend '${name}': pick one of ${Object.keys(BUILDABLE).join(', ')}, or an @attn package name.`,
      );
    for (const p of pkgs) if (!out.includes(p)) out.push(p);
  }
  return out;
}

export function buildCommand(io: CliIO): Command {
  return new Command('build')
    .description(
      "build a backend's native addon from source (where no prebuilt binary fits); needs cmake and a C++17 compiler, plus nvcc or hipcc for GPU backends",
    )
    .addOption(
      new Option(
        '--backend <names...>',
        `backends to build: ${Object.keys(BUILDABLE).join(', ')}`,
      ).makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--archs <list>',
        "CUDA archs, e.g. '89' or '80;90a' (default 80;90a; 'release': what the prebuilt packages carry)",
      ),
    )
    .addOption(
      new Option('--jobs <n>', 'parallel compile jobs (default: every core)').argParser((v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1) throw new CliUsageError(`--jobs takes a positive integer, got '${v}'.`);
        return n;
      }),
    )
    .action((flags: { backend: string[]; archs?: string; jobs?: number }) => {
      for (const pkg of packagesFor(flags.backend)) {
        let root: string;
        try {
          root = resolvePackage(pkg, io.cwd);
        } catch {
          // Not beside the user's project: the copy the CLI itself resolves (e.g. under npx).
          try {
            root = join(createRequire(import.meta.url).resolve(`${pkg}/package.json`), '..');
          } catch {
            throw new CliUsageError(`${pkg} is not installed: \`npm install ${pkg}\` first.`);
          }
        }
        // A failed build throws NativeBuildError (code ATTN_NATIVE_BUILD): exit 1 with its message.
        buildAddon({
          packageRoot: root,
          archs: flags.archs,
          jobs: flags.jobs,
          env: { ...io.env },
          log: (line) => println(io.stdout, line),
        });
      }
    });
}
