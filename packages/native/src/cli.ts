// `attn-native`: builds attn addons from source.
//   npx @attn/native build @attn/flash-cuda [--archs 80;90a|default|release] [--jobs N] [--debug]
//   attn-native build --if-toolchain      (the monorepo's build:native: the package in the working folder)
import { parseArgs } from 'node:util';
import { buildAddon, NativeBuildError } from './source-build/run-build.js';
import { resolvePackage } from './source-build/resolve-package.js';

const USAGE = `usage: attn-native build [package ...] [--archs LIST|default|release] [--jobs N] [--debug] [--if-toolchain]

Builds the native addon of each named attn package (default: the package in this folder) from source
with cmake-js, where no prebuilt binary fits this machine. Needs cmake and a C++17 compiler, plus nvcc
for CUDA packages or hipcc for ROCm ones. Examples:
  npx @attn/native build @attn/cpu
  npx @attn/native build @attn/flash-cuda --archs 89        # only your GPU's arch: a faster build
--archs     CUDA archs (${'`'}80;90a${'`'} by default; 'release': what the prebuilt packages carry)
--if-toolchain  a missing compiler skips the build (recorded in build/SKIPPED) instead of failing`;

export function main(argv: readonly string[]): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        archs: { type: 'string' },
        jobs: { type: 'string' },
        debug: { type: 'boolean' },
        'if-toolchain': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    console.error(`attn-native: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const [command, ...specs] = parsed.positionals;
  if (parsed.values.help || command === undefined) {
    console.log(USAGE);
    return command === undefined && !parsed.values.help ? 2 : 0;
  }
  if (command !== 'build') {
    console.error(`attn-native: unknown command '${command}'\n${USAGE}`);
    return 2;
  }
  const jobs = parsed.values.jobs === undefined ? undefined : Number(parsed.values.jobs);
  if (jobs !== undefined && !(Number.isInteger(jobs) && jobs > 0)) {
    console.error(`attn-native: --jobs takes a positive integer, got '${parsed.values.jobs}'`);
    return 2;
  }
  try {
    for (const spec of specs.length > 0 ? specs : ['.']) {
      buildAddon({
        packageRoot: resolvePackage(spec),
        archs: parsed.values.archs,
        jobs,
        debug: parsed.values.debug,
        skipWithoutToolchain: parsed.values['if-toolchain'] ?? false,
      });
    }
    return 0;
  } catch (e) {
    console.error(e instanceof NativeBuildError ? e.message : `attn-native: ${(e as Error).message}`);
    return 1;
  }
}
