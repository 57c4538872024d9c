// Starts one child process per GPU (scripts/ring-rank.mjs) with a fresh rendezvous folder and
// collects their RESULT lines. The first rank that fails fails the job: the other ranks are killed
// at once (a rank blocked in a transfer to a dead peer would otherwise wait for NCCL forever), and
// the error carries the failing rank's output. A job that does not finish in time is killed too.
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RANK_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'ring-rank.mjs');

/**
 * Runs `job` (without dir/key/size) on `size` ranks; resolves with every rank's results, flattened.
 * Options: timeoutMs (default 300 s), dir (the rendezvous folder), script (the rank program).
 */
export function launchRing(size, job, options = {}) {
  const { timeoutMs = 300_000, dir = mkdtempSync(join(tmpdir(), 'attn-cp-')), script = RANK_SCRIPT } = options;
  const full = { ...job, size, dir, key: `nccl-${process.pid}-${Date.now()}` };
  const children = [];
  let failure = null;
  const killAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  const timer = setTimeout(() => {
    failure ??= `the job did not finish within ${timeoutMs} ms; every rank was killed`;
    killAll();
  }, timeoutMs);
  const runs = Array.from({ length: size }, (_, rank) => {
    // execArgv []: a parent under vitest runs with --conditions @attn/source (TypeScript sources),
    // which a plain node child cannot load; the ranks run the packages' dist/.
    // The rank and the job go as arguments: `<script> <rank> <job JSON>`.
    const child = fork(script, [String(rank), JSON.stringify(full)], {
      execArgv: [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    children.push(child);
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    return new Promise((resolve, reject) => {
      child.on('exit', (code, signal) => {
        const line = text.split('\n').find((l) => l.startsWith('RESULT '));
        if (code === 0 && line) return resolve(JSON.parse(line.slice(7)));
        // Killed because another rank failed first: that rank's error is the job's.
        const cause = failure !== null && signal === 'SIGKILL' ? ` (killed: ${failure})` : '';
        failure ??= `rank ${rank} failed`;
        killAll();
        reject(new Error(`rank ${rank} exited ${code ?? signal}${cause}:\n${text.slice(-4000)}`));
      });
    });
  });
  return Promise.allSettled(runs).then((settled) => {
    clearTimeout(timer);
    const failed = settled.filter((s) => s.status === 'rejected');
    // The rank that failed on its own first, then the ones killed after it.
    failed.sort(
      (a, b) => Number(a.reason.message.includes('(killed:')) - Number(b.reason.message.includes('(killed:')),
    );
    if (failed.length > 0) throw new Error(failed.map((f) => f.reason.message).join('\n---\n'));
    return { dir, results: settled.flatMap((s) => s.value) };
  });
}
