// Starts one child process per GPU (scripts/ring-rank.mjs) with a fresh rendezvous folder and
// collects their RESULT lines; a failing rank fails the job with its output, and a rank that does
// not finish in time is killed (each child by its own pid).
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RANK_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'ring-rank.mjs');

/** Runs `job` (without dir/key/size) on `size` ranks; resolves with every rank's results, flattened. */
export function launchRing(size, job, timeoutMs = 300_000, dir = mkdtempSync(join(tmpdir(), 'attn-cp-'))) {
  const full = { ...job, size, dir, key: `nccl-${process.pid}-${Date.now()}` };
  const runs = Array.from({ length: size }, (_, rank) => {
    // execArgv []: a parent under vitest runs with --conditions @attn/source (TypeScript sources),
    // which a plain node child cannot load; the ranks run the packages' dist/.
    const child = fork(RANK_SCRIPT, [], {
      execArgv: [],
      env: { ...process.env, ATTN_CP_RANK: String(rank), ATTN_CP_JOB: JSON.stringify(full) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    return new Promise((resolve, reject) => {
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        const line = text.split('\n').find((l) => l.startsWith('RESULT '));
        if (code === 0 && line) resolve(JSON.parse(line.slice(7)));
        else reject(new Error(`rank ${rank} exited ${code ?? signal}:\n${text.slice(-4000)}`));
      });
    });
  });
  return Promise.allSettled(runs).then((settled) => {
    const failed = settled.filter((s) => s.status === 'rejected');
    if (failed.length > 0) throw new Error(failed.map((f) => f.reason.message).join('\n---\n'));
    return { dir, results: settled.flatMap((s) => s.value) };
  });
}
