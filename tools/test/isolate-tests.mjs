#!/usr/bin/env node
// Runs each test of a vitest file in a process of its own and names the ones that crash it. A native crash
// (SIGSEGV, SIGILL, an abort) takes down the vitest worker that runs a whole file, and vitest then reports
// only "Worker exited unexpectedly", not which test was running; one test per process names it.
//
//   node tools/test/isolate-tests.mjs <package dir> <test file> [--filter REGEX] [--timeout SECONDS]
//   e.g. node tools/test/isolate-tests.mjs packages/cpu src/flash/backward.test.ts --filter amx
//
// The tests are the file's own (`vitest list --json`); --filter keeps those whose full name matches. Prints
// each test's name before it runs and its outcome after (passed, skipped, failed, crashed with the worker's
// exit, timed out). Exit status: 0 when none failed or crashed, 1 otherwise.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const vitest = resolve(root, 'node_modules/vitest/vitest.mjs');
const argv = process.argv.slice(2);
const option = (name) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv.splice(i, 2)[1] : undefined;
};
const filter = option('filter');
const timeoutS = Number(option('timeout') ?? 600);
const [pkg, file] = argv;
if (!pkg || !file) {
  console.error('usage: isolate-tests.mjs <package dir> <test file> [--filter REGEX] [--timeout SECONDS]');
  process.exit(2);
}
const cwd = resolve(root, pkg);

const listed = spawnSync(process.execPath, [vitest, 'list', file, '--json'], { cwd, encoding: 'utf8' });
if (listed.status !== 0) {
  console.error(`vitest list failed (status ${listed.status}):\n${listed.stderr}`);
  process.exit(2);
}
const names = JSON.parse(listed.stdout.slice(listed.stdout.indexOf('[')))
  .map((t) => t.name)
  .filter((n) => !filter || new RegExp(filter).test(n));

// vitest's -t matches a regular expression against the test's full name (describe and test names joined
// by spaces): the list joins them with ' > '.
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const pattern = (name) => `^${name.split(' > ').map(escape).join(' ')}$`;

const bad = [];
names.forEach((name, i) => {
  const tag = `[${i + 1}/${names.length}]`;
  console.log(`${tag} RUN  ${name}`);
  const r = spawnSync(process.execPath, [vitest, 'run', file, '-t', pattern(name)], {
    cwd,
    encoding: 'utf8',
    timeout: timeoutS * 1000,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  const out = `${r.stdout}\n${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
  let outcome;
  if (r.error?.code === 'ETIMEDOUT') outcome = `timed out after ${timeoutS} s`;
  else if (/Worker exited unexpectedly|Worker forks emitted error/.test(out) || r.signal)
    outcome = `crashed (${r.signal ?? 'the worker exited unexpectedly'})`;
  else if (r.status !== 0) outcome = 'failed';
  else if (/Tests\s+1 passed/.test(out)) outcome = 'passed';
  else outcome = 'skipped (by the test itself, or its name matched nothing)';
  const ok = outcome === 'passed' || outcome.startsWith('skipped');
  console.log(`${tag} ${ok ? 'OK ' : 'BAD'}  ${name}: ${outcome}`);
  if (!ok) bad.push(`${name}: ${outcome}`);
});
console.log(`\n${names.length} tests, ${bad.length} failed, crashed or not run${bad.length ? ':' : ''}`);
for (const b of bad) console.log(`  ${b}`);
process.exit(bad.length ? 1 : 0);
