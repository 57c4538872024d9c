#!/usr/bin/env node
// Builds a package's native addon with cmake-js, run from the package directory by its
// `build:native` script. When the toolchain the addon needs is missing, it says so and exits 0: the
// package still imports and reports the reason through `availability()` and `attn doctor`.
//
//   node ../../tools/scripts/native-build.mjs --toolchain nvcc|hipcc|cxx [--target name]
//
// Environment: ATTN_CUDA_ARCHS (e.g. "90a;80"; default in each CMakeLists.txt), ATTN_NATIVE_DEBUG=1
// for a debug build with line info, ATTN_BUILD_JOBS (default: the CPU count).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const toolchain = valueOf('--toolchain') ?? 'cxx';
const pkgDir = process.cwd();
const pkgName = createRequire(join(pkgDir, 'package.json'))('./package.json').name;

function valueOf(flag) {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

function findNvcc() {
  const candidates = [process.env.CUDACXX, process.env.CUDA_HOME && join(process.env.CUDA_HOME, 'bin/nvcc'),
    which('nvcc'), '/usr/local/cuda/bin/nvcc'];
  return candidates.find((c) => c && existsSync(c)) ?? null;
}

// Records why the addon was not built, so availability() can say it precisely.
function skip(reason) {
  mkdirSync(join(pkgDir, 'build'), { recursive: true });
  writeFileSync(join(pkgDir, 'build', 'SKIPPED'), `${reason}\n`);
  console.log(`${pkgName}: native build skipped: ${reason}`);
  process.exit(0);
}

const defines = [];
if (toolchain === 'nvcc') {
  const nvcc = findNvcc();
  if (!nvcc) skip('nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX');
  defines.push(`--CDCMAKE_CUDA_COMPILER=${nvcc}`);
  if (process.env.ATTN_CUDA_ARCHS) defines.push(`--CDATTN_CUDA_ARCHS=${process.env.ATTN_CUDA_ARCHS.replaceAll(',', ';')}`);
} else if (toolchain === 'hipcc') {
  const hipcc = process.env.HIPCXX ?? which('hipcc') ?? (existsSync('/opt/rocm/bin/hipcc') ? '/opt/rocm/bin/hipcc' : null);
  if (!hipcc) skip('hipcc (the ROCm compiler) was not found; install ROCm or set HIPCXX');
  defines.push(`--CDATTN_HIPCC=${hipcc}`);
}
if (!which('cmake')) skip('cmake was not found; install cmake >= 3.24');

const debug = process.env.ATTN_NATIVE_DEBUG === '1';

// cmake-js keeps a configured build directory and would silently keep its old arch list or build
// type; start afresh whenever what we configure with differs from last time.
const config = JSON.stringify({ defines, debug, archs: process.env.ATTN_CUDA_ARCHS ?? 'default', rocmArchs: process.env.ATTN_ROCM_ARCHS ?? 'default' });
const marker = join(pkgDir, 'build', 'attn-config.json');
if (existsSync(join(pkgDir, 'build')) && (!existsSync(marker) || readFileSync(marker, 'utf8') !== config)) {
  rmSync(join(pkgDir, 'build'), { recursive: true, force: true });
}
const jobs = process.env.ATTN_BUILD_JOBS ?? String(availableParallelism());
const cmakeJs = createRequire(join(pkgDir, 'package.json')).resolve('cmake-js/bin/cmake-js');
const cmd = [cmakeJs, 'compile', ...(debug ? ['--debug'] : []), ...defines];
console.log(`${pkgName}: ${['cmake-js', ...cmd.slice(1)].join(' ')} (jobs ${jobs})`);
const r = spawnSync(process.execPath, cmd, {
  stdio: 'inherit',
  env: { ...process.env, CMAKE_BUILD_PARALLEL_LEVEL: jobs },
});
if (r.status !== 0) {
  console.error(`${pkgName}: native build failed (exit ${r.status}); see the compiler output above`);
  process.exit(r.status ?? 1);
}
writeFileSync(marker, config);
