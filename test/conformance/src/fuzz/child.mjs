// The fuzz suite's child process: every case runs here, so that a crash (a segfault in a native
// kernel, an abort) kills this process and is reported as that case's failure instead of taking
// the test run down. Plain JavaScript because Node starts it; it loads the TypeScript sources
// (worker.ts and the backend packages, given as absolute paths in argv[2]) through Vite's module
// runner, with the same '@attn/source' condition the vitest config uses.
//
// Protocol (IPC, advanced serialization so NaN, Infinity and bigint survive):
//   parent -> child { id, fn, args }   fn: 'runValid' | 'runInvalid'
//   child -> parent { ready: true } once loaded, then { id, result } or { id, error } per request.
import process from 'node:process';
import { createServer, createServerModuleRunner, defaultServerConditions } from 'vite';

const { modules, worker } = JSON.parse(process.argv[2]);
const conditions = ['@attn/source', ...defaultServerConditions];
const server = await createServer({
  configFile: false,
  root: process.cwd(),
  logLevel: 'error',
  appType: 'custom',
  server: { middlewareMode: true, hmr: false, ws: false, watch: null },
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  optimizeDeps: { noDiscovery: true, include: [] },
});
const runner = createServerModuleRunner(server.environments.ssr, { hmr: false });
for (const m of modules) await runner.import(m);
const api = await runner.import(worker);

process.on('message', async ({ id, fn, args }) => {
  try {
    const result = await api[fn](...args);
    process.send({ id, result });
  } catch (e) {
    process.send({ id, error: e instanceof Error ? `${e.name}: ${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
