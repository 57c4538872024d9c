#!/usr/bin/env node
// Makes a user's project folder installed from a registry, for a machine that reaches none (a GPU
// host): starts the test registry, publishes this checkout to it (as run.mjs does), and runs plain
// `npm install <packages>` in <dir>. Carry <dir> and a Node.js binary to the host, then run e.g.
// `node node_modules/@attn/cli/dist/bin.js check --device cuda` there.
// Usage: node tools/registry/install-app.mjs <dir> <package>...
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishAll } from './publish.mjs';
import { startRegistry, userEnv } from './registry.mjs';

const [dirArg, ...pkgs] = process.argv.slice(2);
if (!dirArg || pkgs.length === 0) {
  console.error('usage: node tools/registry/install-app.mjs <dir> <package>...');
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = resolve(dirArg);
const log = (line) => console.log(`[install-app] ${line}`);
const work = mkdtempSync(join(tmpdir(), 'attn-install-app-'));
const registry = await startRegistry(work, log);
try {
  const { unbuilt } = publishAll(root, registry, join(work, 'tarballs'), log);
  if (unbuilt.length > 0) throw new Error(`build these first: ${unbuilt.map((u) => u.name).join(', ')}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'attn-app', version: '1.0.0', private: true, type: 'module' }),
  );
  const r = spawnSync('npm', ['install', ...pkgs], { cwd: dir, env: userEnv(registry), stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`npm install failed (exit ${r.status})`);
  log(`installed ${pkgs.join(' ')} into ${dir}`);
} finally {
  registry.stop();
  rmSync(work, { recursive: true, force: true });
}
