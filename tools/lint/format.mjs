#!/usr/bin/env node
// The one formatter entry point: Prettier for TypeScript, JavaScript, JSON, YAML and Markdown;
// clang-format (22, from the clang-format-node package, so no system install) for C, C++, CUDA and HIP.
// Configs: .prettierrc.json / .prettierignore and .clang-format / .clang-format-ignore at the root.
// Files come from `git ls-files`, so build outputs and untracked scratch files are never touched.
//
//   node tools/lint/format.mjs           # rewrite files in place
//   node tools/lint/format.mjs --check   # exit 1 and name each file that is not formatted (CI)
import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const check = process.argv.includes('--check');
const require = createRequire(import.meta.url);

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
const native = tracked.filter((f) => /\.(c|cc|cpp|h|hpp|cu|cuh|hip)$/.test(f));

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

// Prettier gets the tracked files of the languages it owns by name (given a folder it would guess
// parsers for other files, such as HTML for a CUDA `.inc`); .prettierignore still applies.
const prettier = join(dirname(require.resolve('prettier/package.json')), 'bin', 'prettier.cjs');
const web = tracked.filter((f) => /\.(ts|mts|cts|js|mjs|cjs|json|md|ya?ml)$/.test(f));
let prettierStatus = 0;
for (let i = 0; i < web.length; i += 200) {
  const batch = web.slice(i, i + 200);
  const status = run(process.execPath, [prettier, check ? '--check' : '--write', '--log-level', 'warn', ...batch]);
  prettierStatus ||= status;
}

// clang-format reads .clang-format-ignore for the generated trees. Batches keep argv short.
const { clangFormatPath } = require('clang-format-node');
let clangStatus = 0;
for (let i = 0; i < native.length; i += 200) {
  const batch = native.slice(i, i + 200);
  const args = check ? ['--dry-run', '-Werror', ...batch] : ['-i', ...batch];
  const status = run(clangFormatPath, args);
  clangStatus ||= status;
}

if (prettierStatus || clangStatus) {
  if (check) console.error('format: files above are not formatted; run `pnpm format` and commit the result.');
  process.exit(1);
}
