// A throwaway Verdaccio on loopback: installed from tools/registry/verdaccio (npm ci, pinned), its
// storage and users in a temp folder, stopped when the test ends. Returns the URL and an npm
// environment (its own userconfig with a token) that every npm call of the test uses.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const verdaccioDir = join(here, 'verdaccio');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function installVerdaccio(log) {
  const bin = join(verdaccioDir, 'node_modules', 'verdaccio', 'bin', 'verdaccio');
  if (existsSync(bin)) return bin;
  log('installing verdaccio 6.8.0 (npm ci)');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: verdaccioDir,
    stdio: 'inherit',
  });
  if (r.status !== 0 || !existsSync(bin)) throw new Error(`npm ci of verdaccio failed (exit ${r.status})`);
  return bin;
}

async function waitUntilUp(url, child, logFile) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode}); see ${logFile}`);
    try {
      const r = await fetch(`${url}-/ping`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`verdaccio did not answer on ${url} within 60 s; see ${logFile}`);
}

/** Starts the registry under `work` (a temp folder); `stop()` ends it. */
export async function startRegistry(work, log) {
  const upstream =
    spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).stdout.trim() ||
    'https://registry.npmjs.org/';
  const bin = installVerdaccio(log);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  mkdirSync(join(work, 'storage'), { recursive: true });
  const config = readFileSync(join(here, 'verdaccio.yaml'), 'utf8')
    .replace('@STORAGE@', join(work, 'storage'))
    .replace('@HTPASSWD@', join(work, 'htpasswd'))
    .replace('@UPSTREAM@', upstream);
  const configFile = join(work, 'verdaccio.yaml');
  writeFileSync(configFile, config);
  const logFile = join(work, 'verdaccio.log');
  const out = createWriteStream(logFile);
  const child = spawn(process.execPath, [bin, '--config', configFile, '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.on('exit', stop);
  try {
    await waitUntilUp(url, child, logFile);
    // A user to publish as: Verdaccio's htpasswd plugin makes one on first login.
    const r = await fetch(`${url}-/user/org.couchdb.user:attn-ci`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'attn-ci',
        password: 'attn-ci-password',
        type: 'user',
        roles: [],
        date: new Date().toISOString(),
      }),
    });
    const { token } = await r.json();
    if (!r.ok || !token) throw new Error(`could not create a publishing user (HTTP ${r.status})`);
    const npmrc = join(work, 'npmrc');
    writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
    log(`verdaccio on ${url} (storage ${join(work, 'storage')}, everything but @attn/* from ${upstream})`);
    // npm's settings for every call of the test: this registry, its token, no audit or fund requests, and
    // a cache of its own. Every run publishes the same versions (0.1.0), so a shared cache would hand npx
    // an earlier run's install (~/.npm/_npx keeps @attn/core@0.1.0 from the last run that installed it).
    const npmConfig = {
      npm_config_userconfig: npmrc,
      npm_config_registry: url,
      npm_config_cache: join(work, 'npm-cache'),
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    return { url, env: { ...process.env, ...npmConfig }, npmConfig, logFile, stop };
  } catch (e) {
    stop();
    throw e;
  }
}

/** The environment of a user's shell: none of pnpm's variables, no workspace bins on PATH; npm set to the registry. */
export function userEnv(registry) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|pnpm_|PNPM_|NODE_PATH$|NODE_OPTIONS$|INIT_CWD$)/i.test(k)) env[k] = v;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((p) => !p.includes('node_modules'))
    .join(':');
  return { ...env, ...registry.npmConfig };
}
