// The native addon's boundary, on any machine where it is built (no GPU needed): a unique id has
// NCCL's size, and every bad argument is a JS error with a code (ATTN_BAD_ARGUMENT, ATTN_BAD_HANDLE)
// thrown before anything reaches NCCL or CUDA, never a crash. Skipped with the reason where the addon
// is not built (no NCCL or no nvcc at build time).
import { describeWhereRunnable } from '@attn/conformance';
import { describe, expect, it } from 'vitest';
import { addonLoad, loaderHint } from './addon.js';
import type { NcclReport } from './find.js';

const load = addonLoad();

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}

describeWhereRunnable('context-parallel addon boundary', load.ok ? null : load.reason, () => {
  const a = load.ok ? load.addon : null!;

  it('makes a unique id of NCCL size', () => {
    expect(a.getUniqueId().byteLength).toBe(a.buildInfo().uniqueIdBytes);
  });

  it('refuses bad arguments with coded errors', () => {
    const any = a as unknown as Record<string, (...args: unknown[]) => unknown>;
    const id = a.getUniqueId();
    // Wrong types and sizes.
    expect(codeOf(() => any.commInitRank!(2, new Uint8Array(3), 0, 0))).toBe('ATTN_BAD_ARGUMENT');
    expect(codeOf(() => any.commInitRank!(-1, id, 0, 0))).toBe('ATTN_BAD_ARGUMENT');
    expect(codeOf(() => any.commInitRank!(2, id, 0.5, 0))).toBe('ATTN_BAD_ARGUMENT');
    expect(codeOf(() => any.merge!(1, 0n, 0n, 0n, 1, 1, 0, 0n))).toBe('ATTN_BAD_ARGUMENT');
    expect(codeOf(() => any.accumulate!(0n, 0n, 4, 3, 0n))).toBe('ATTN_BAD_ARGUMENT'); // element type 3
    expect(codeOf(() => any.convert!(0n, 0n, 'n', 0, 0n))).toBe('ATTN_BAD_ARGUMENT');
    const u64 = new BigUint64Array(1);
    expect(codeOf(() => any.sendRecv!(1n, 1, 0, u64, u64, u64, new BigUint64Array(2), 0n))).toBe('ATTN_BAD_ARGUMENT');
    expect(codeOf(() => any.sendRecv!(1n, 1, 0, u64, new Float64Array(1), u64, u64, 0n))).toBe('ATTN_BAD_ARGUMENT');
    // A destroyed (zero) communicator handle.
    for (const f of ['commStatus', 'commFinalize', 'commDestroy', 'commAbort'])
      expect(
        codeOf(() => any[f]!(0n)),
        f,
      ).toBe('ATTN_BAD_HANDLE');
    expect(codeOf(() => any.sendRecv!(0n, 1, 0, u64, u64, u64, u64, 0n))).toBe('ATTN_BAD_HANDLE');
  });
});

describe('a built addon whose libnccl.so.2 the loader cannot find', () => {
  const missing =
    '/x/context_parallel.node failed to load (libnccl.so.2: cannot open shared object file: No such file or directory)';
  const report = (paths: string[]) => () =>
    ({
      pythonCopies: paths.map((path) => ({ source: 'site-packages', path, version: null })),
    }) as unknown as NcclReport;

  it('names the Python copies the loader does not search', () => {
    const hint = loaderHint(missing, report(['/site/nvidia/nccl/lib/libnccl.so.2']));
    expect(hint).toMatch(/does not search \/site\/nvidia\/nccl\/lib: start node with LD_LIBRARY_PATH/);
  });

  it('says what to install when there is none, and nothing for other failures', () => {
    expect(loaderHint(missing, report([]))).toMatch(/nvidia-nccl-cu13/);
    expect(loaderHint('not built', report(['/site/nvidia/nccl/lib/libnccl.so.2']))).toBe('');
  });
});
