// Build-time NCCL from the nvidia-nccl-cu13 wheel: `pip download` (pip's configured index, which may be
// a local one) and unzip into a folder. The native build (scripts/nccl-build-paths.mjs) runs it into the
// package's build/nccl-wheel when findNccl finds no other NCCL, and findNccl then reads it there
// (README, "Transport"). Python's zipfile unpacks, so no unzip binary is needed.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cpError } from '../errors.js';

export const NCCL_WHEEL = 'nvidia-nccl-cu13';

function step(what: string, cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) {
    const detail = r.error ? r.error.message : `${r.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ');
    throw cpError('ATTN_CP_TRANSPORT', `${what} failed (${cmd} ${args.join(' ')}): ${detail}`);
  }
}

/** Downloads and extracts the wheel into `dir` (dir/nvidia/nccl/{include,lib}); returns dir. */
export function fetchNcclWheel(dir: string, python = 'python3'): string {
  mkdirSync(dir, { recursive: true });
  step('pip download', python, ['-m', 'pip', 'download', NCCL_WHEEL, '--no-deps', '--only-binary=:all:', '-d', dir]);
  const wheel = readdirSync(dir).find((f) => /^nvidia_nccl_cu13-.*\.whl$/.test(f));
  if (!wheel) throw cpError('ATTN_CP_TRANSPORT', `pip download left no ${NCCL_WHEEL} wheel in ${dir}.`);
  step('unpacking the wheel', python, ['-m', 'zipfile', '-e', join(dir, wheel), dir]);
  return dir;
}
