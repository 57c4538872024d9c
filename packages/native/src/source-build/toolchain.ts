// Finds the compilers an addon's build needs. A missing one is a reason, not an exception: the
// monorepo's build records it and skips (the package still imports and says why); a user's source
// build stops with it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { NativeConfig } from '../package-json.js';

export interface Toolchain {
  /** CMake definitions that point the build at the compiler found. */
  readonly defines: Readonly<Record<string, string>>;
  /** For the log: what was found. */
  readonly description: string;
}

export type ToolchainResult =
  { readonly ok: true; readonly toolchain: Toolchain } | { readonly ok: false; readonly reason: string };

export function which(cmd: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const r = spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8', env });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

function firstExisting(candidates: readonly (string | null | undefined)[]): string | null {
  return candidates.find((c): c is string => !!c && existsSync(c)) ?? null;
}

export function findToolchain(kind: NativeConfig['toolchain'], env: NodeJS.ProcessEnv = process.env): ToolchainResult {
  const cmake = which('cmake', env);
  if (!cmake) return { ok: false, reason: 'cmake was not found; install cmake >= 3.24 (e.g. `apt-get install cmake`)' };
  if (kind === 'nvcc') {
    const nvcc = firstExisting([
      env.CUDACXX,
      env.CUDA_HOME && join(env.CUDA_HOME, 'bin/nvcc'),
      which('nvcc', env),
      '/usr/local/cuda/bin/nvcc',
    ]);
    if (!nvcc)
      return { ok: false, reason: 'nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX' };
    return {
      ok: true,
      toolchain: { defines: { CMAKE_CUDA_COMPILER: nvcc }, description: `cmake ${cmake}, nvcc ${nvcc}` },
    };
  }
  if (kind === 'hipcc') {
    const hipcc = firstExisting([env.HIPCXX, which('hipcc', env), '/opt/rocm/bin/hipcc']);
    if (!hipcc) return { ok: false, reason: 'hipcc (the ROCm compiler) was not found; install ROCm or set HIPCXX' };
    return { ok: true, toolchain: { defines: { ATTN_HIPCC: hipcc }, description: `cmake ${cmake}, hipcc ${hipcc}` } };
  }
  const cxx = firstExisting([
    env.CXX && (env.CXX.includes('/') ? env.CXX : which(env.CXX, env)),
    which('c++', env),
    which('g++', env),
    which('clang++', env),
  ]);
  if (!cxx) return { ok: false, reason: 'no C++17 compiler was found; install g++ or clang++ (or set CXX)' };
  return { ok: true, toolchain: { defines: {}, description: `cmake ${cmake}, ${cxx}` } };
}
