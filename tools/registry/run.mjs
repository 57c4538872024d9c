#!/usr/bin/env node
// The install test: attn as a user gets it from a registry. Starts a Verdaccio on loopback, publishes
// every public package of this checkout to it (the prebuilt platform packages with the binaries this
// checkout built), then, in empty folders outside the workspace and with plain npm only:
//   1. `npm install @attn/core @attn/cpu` selects cpu-flash on the prebuilt binary, with and without
//      --ignore-scripts (so no install script built anything);
//   2. `npm install @attn/core @attn/flash-cuda` installs no cpu, memeff or rocm package, and the CUDA
//      backends loaded their prebuilt addons (on a machine without a GPU they say so);
//   3. `npx @attn/cli doctor` runs from the registry;
//   4. without the optional prebuilt, cpu-flash says what it looked for and the fix, and
//      `npx @attn/native build @attn/cpu` builds it from the published sources (build tools fetched
//      from the registry into a fresh cache), after which cpu-flash runs on that local build.
// Prints each check and 'N passed, N failed'; exits 1 if any failed. Usage: node tools/registry/run.mjs
// [--keep] (keep the temp folder) [--only NAME,...]. The sizes of the published packages go to
// <temp>/sizes.json and the log.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishAll } from './publish.mjs';
import { startRegistry, userEnv } from './registry.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const args = process.argv.slice(2);
const keep = args.includes('--keep');
const only = args.includes('--only') ? args[args.indexOf('--only') + 1].split(',') : null;
const log = (line) => console.log(`[registry] ${line}`);

function sh(cmd, cmdArgs, cwd, env) {
  const r = spawnSync(cmd, cmdArgs, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

const work = mkdtempSync(join(tmpdir(), 'attn-registry-'));
const results = [];
let registry;
try {
  registry = await startRegistry(work, log);
  const { published, unbuilt } = publishAll(root, registry, join(work, 'tarballs'), log);
  writeFileSync(join(work, 'sizes.json'), JSON.stringify(published, null, 2));
  const env = userEnv(registry);

  /** An empty project folder outside the workspace, with the probe scripts copied in. */
  const app = (name) => {
    const dir = join(work, 'apps', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: `attn-app-${name}`, version: '1.0.0', private: true, type: 'module' }),
    );
    cpSync(join(here, 'probes'), join(dir, 'probes'), { recursive: true });
    return dir;
  };
  const check = (name, fn, needs = []) => {
    if (only && !only.includes(name)) return;
    const absent = unbuilt.filter((u) => needs.includes(u.name));
    if (absent.length > 0) {
      const why = absent.map((u) => `${u.name} was not built here (${u.reason})`).join('; ');
      results.push({ name, ok: null, seconds: '0', detail: { why } });
      console.log(`SKIP ${name}: ${why}`);
      return;
    }
    const t0 = Date.now();
    let detail;
    let ok = false;
    try {
      detail = fn();
      ok = detail.ok;
    } catch (e) {
      detail = { ok: false, why: e instanceof Error ? e.message : String(e) };
    }
    const seconds = ((Date.now() - t0) / 1000).toFixed(0);
    results.push({ name, ok, seconds, detail });
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name} (${seconds} s)${detail.note ? `: ${detail.note}` : ''}`);
    if (!ok) console.log(detail.why ?? detail.out ?? JSON.stringify(detail));
  };
  const npmInstall = (dir, pkgs, extra = []) => {
    const r = sh('npm', ['install', ...extra, ...pkgs], dir, env);
    if (r.status !== 0) throw new Error(`npm install ${[...extra, ...pkgs].join(' ')} failed:\n${r.out}`);
  };
  const probe = (dir, script, probeArgs = []) => {
    const r = sh(process.execPath, [join('probes', script), ...probeArgs], dir, env);
    return { ok: r.status === 0, out: r.out.trim(), note: r.out.trim().split('\n')[0] };
  };

  for (const [name, extra] of [
    ['cpu-prebuilt', []],
    ['cpu-prebuilt-ignore-scripts', ['--ignore-scripts']],
  ]) {
    check(name, () => {
      const dir = app(name);
      npmInstall(dir, ['@attn/core', '@attn/cpu'], extra);
      return probe(dir, 'cpu.mjs', ['prebuilt']);
    }, ['@attn/cpu-linux-x64-gnu']);
  }

  check(
    'flash-cuda-alone',
    () => {
      const dir = app('flash-cuda-alone');
      npmInstall(dir, ['@attn/core', '@attn/flash-cuda']);
      const ls = sh('npm', ['ls', '--all', '--json'], dir, env);
      const names = new Set();
      const walk = (deps) => {
        for (const [n, d] of Object.entries(deps ?? {})) {
          names.add(n);
          walk(d.dependencies);
        }
      };
      walk(JSON.parse(ls.out.slice(ls.out.indexOf('{'))).dependencies);
      const stray = [...names].filter((n) => /^@attn\/(cpu|cutlass-memeff|rocm)/.test(n));
      const needed = ['@attn/flash-cuda-linux-x64-gnu', '@attn/cuda-linux-x64-gnu', '@attn/native'].filter(
        (n) => !names.has(n),
      );
      const p = probe(dir, 'cuda.mjs');
      const installed = [...names]
        .filter((n) => n.startsWith('@attn/'))
        .sort()
        .join(', ');
      return {
        ok: stray.length === 0 && needed.length === 0 && p.ok,
        note: `installed ${installed}; ${p.note}`,
        why: `stray: ${stray.join(', ') || 'none'}; missing: ${needed.join(', ') || 'none'}; probe: ${p.out}`,
      };
    },
    ['@attn/flash-cuda-linux-x64-gnu', '@attn/cuda-linux-x64-gnu'],
  );

  check(
    'cli-doctor-npx',
    () => {
      const dir = app('cli-doctor');
      const r = sh('npx', ['--yes', '@attn/cli', 'doctor'], dir, env);
      const ok = r.status === 0 && /cpu-flash\s.*available/.test(r.out) && !/cpu-flash\s.*unavailable/.test(r.out);
      return { ok, out: r.out, note: (r.out.match(/^.*cpu-flash.*$/m) ?? ['(no cpu-flash line)'])[0].trim() };
    },
    ['@attn/cpu-linux-x64-gnu'],
  );

  check(
    'cpu-source-build',
    () => {
      const dir = app('cpu-source-build');
      npmInstall(dir, ['@attn/core', '@attn/cpu'], ['--omit=optional']);
      const missing = probe(dir, 'cpu-missing.mjs');
      if (!missing.ok) return { ok: false, why: `without the prebuilt: ${missing.out}` };
      // A fresh cache: the build tools come from the registry, as on a user's first source build.
      const buildEnv = { ...env, XDG_CACHE_HOME: join(work, 'cache'), ATTN_BUILD_JOBS: '2' };
      const b = sh('npx', ['--yes', '@attn/native', 'build', '@attn/cpu'], dir, buildEnv);
      if (b.status !== 0) return { ok: false, why: `the source build failed:\n${b.out}` };
      const p = probe(dir, 'cpu.mjs', ['local build']);
      const built = (b.out.match(/built \S+ \(([\d.]+ MB)\) in (\d+) s/) ?? []).slice(1).join(' in ');
      return { ...p, note: `source build ${built} s; ${p.note}` };
    },
    ['@attn/cpu-linux-x64-gnu'],
  );
} catch (e) {
  results.push({ name: 'setup', ok: false, detail: { why: e instanceof Error ? e.stack : String(e) } });
  console.log(`FAIL setup: ${e instanceof Error ? e.message : String(e)}`);
  if (registry) console.log(readFileSync(registry.logFile, 'utf8').slice(-4000));
} finally {
  registry?.stop();
  if (!keep) rmSync(work, { recursive: true, force: true });
  else log(`kept ${work}`);
}
const passed = results.filter((r) => r.ok === true).length;
const skipped = results.filter((r) => r.ok === null).length;
const failed = results.length - passed - skipped;
console.log(`registry: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
