// memeff-cuda's case table (gpu-table-*.test.ts run it through the conformance harness, forward and
// backward): head dims from 7 to 300 with Dv != D, the column-split backward above 128, the exact
// head-dim forwards, every mask shape and dtype through the staged mask tile, dbias by atomics and
// by its own kernel, the lean backward step, the 3xTF32 forward's wide form, dropout, query splits,
// the deterministic mode, both kernel paths forced, windows, ALiBi, softcap, varlen and sequsedK.
import { type Short, type TableCase, tableCase } from '@attn/conformance';
import type { FloatDType } from '@attn/core';
import { type KernelPath, runBackward, runForward } from './index.js';

/** The script-era shorthand: causal names its alignment, `path` forces the kernel path, `sequsedK` per row. */
interface MemeffShort extends Omit<Short, 'causal' | 'mask' | 'used'> {
  causal?: 'upperLeft' | 'lowerRight';
  path?: KernelPath;
  sequsedK?: number[];
  mask?: { kind: 'bool' | 'additive'; shape: number[]; fullyMasked?: boolean; dtype?: 'float32' };
}

const ALL: readonly FloatDType[] = ['float32', 'float16', 'bfloat16'];

/** A forced path: the forward on it, the backward on it where it is the FMA one (else the plan's). */
function forcedPath(path: KernelPath): TableCase['launch'] {
  const bwdPath: KernelPath = path === 'simt' ? 'simt' : 'auto';
  return {
    forward: (p) => runForward(p, path).outputs,
    backward: (p, saved, gradOut) => runBackward(p, saved, gradOut, bwdPath).gradients,
  };
}

export function memeffCases(): TableCase[] {
  const cases: TableCase[] = [];
  const add = (name: string, c: MemeffShort, dtypes: readonly FloatDType[] = ALL, declinedBy?: string) => {
    const { causal, path, sequsedK, mask, alignment, ...rest } = c;
    const short: Short = {
      ...rest,
      ...(causal ? { causal: true, alignment: alignment ?? causal } : alignment ? { alignment } : {}),
      ...(sequsedK ? { used: sequsedK } : {}),
      ...(mask
        ? {
            mask: {
              kind: mask.kind,
              shape: mask.shape,
              ...(mask.fullyMasked ? { fullyMaskedRows: true } : {}),
              ...(mask.dtype ? { dtype: mask.dtype } : {}),
            },
          }
        : {}),
    };
    const extra = { ...(path ? { launch: forcedPath(path) } : {}), ...(declinedBy ? { declinedBy } : {}) };
    for (const dtype of dtypes) cases.push(tableCase(`${name} ${dtype}`, { ...short, dtype }, extra));
  };
  add('tiny s1 d8', { B: 1, Hq: 1, Sq: 1, Sk: 1, D: 8 });
  add('sq17 sk23 d8', { B: 2, Hq: 2, Sq: 17, Sk: 23, D: 8 });
  add('d72 h3 (mma bucket 128)', { B: 2, Hq: 3, Sq: 65, Sk: 130, D: 72 });
  add('d7 dv13 (simt)', { B: 2, Hq: 2, Sq: 33, Sk: 47, D: 7, Dv: 13 });
  add('d64 dv128', { B: 1, Hq: 2, Sq: 100, Sk: 200, D: 64, Dv: 128 });
  add('d160 dv40 (two z tiles on simt)', { B: 1, Hq: 2, Sq: 70, Sk: 90, D: 160, Dv: 40 });
  add('d256', { B: 1, Hq: 2, Sq: 129, Sk: 257, D: 256 });
  // Head dims above 128 on the tensor-core backward: dK/dV/dQ columns split over two blocks (balanced
  // halves: 80 + 80 at D 160, 96 + 96 at 192), masks read from global memory, dbias from the first block only.
  add('d160 col-split', { B: 1, Hq: 2, Sq: 100, Sk: 300, D: 160 }, ['float16', 'bfloat16']);
  add(
    'd192 bias gqa col-split',
    { B: 2, Hq: 4, Hk: 2, Sq: 70, Sk: 260, D: 192, mask: { kind: 'additive', shape: [1, 4, 70, 260] } },
    ['float16', 'bfloat16'],
  );
  add('d256 causal dropout col-split', { B: 1, Hq: 2, Sq: 200, Sk: 256, D: 256, causal: 'lowerRight', dropoutP: 0.2 }, [
    'float16',
    'bfloat16',
  ]);
  add(
    'd256 bool mask deterministic col-split',
    { B: 1, Hq: 2, Sq: 90, Sk: 270, D: 256, deterministic: true, mask: { kind: 'bool', shape: [1, 1, 90, 270] } },
    ['float16', 'bfloat16'],
  );
  add('d256 dv128 col-split', { B: 1, Hq: 2, Sq: 64, Sk: 200, D: 256, Dv: 128 }, ['float16', 'bfloat16']);
  // D == Dv 160 and 192 run their exact head dim's forward (fwd/mma_traits.h; 192-wide shared tiles at 160);
  // with a window's left side (a feature) the d256 bucket's feature kernel.
  add('d160 causal dropout exact-fwd', { B: 2, Hq: 3, Sq: 333, Sk: 333, D: 160, causal: 'upperLeft', dropoutP: 0.15 }, [
    'float16',
    'bfloat16',
  ]);
  add(
    'd192 causal lr bool mask exact-fwd',
    { B: 1, Hq: 2, Sq: 97, Sk: 301, D: 192, causal: 'lowerRight', mask: { kind: 'bool', shape: [1, 1, 97, 301] } },
    ['float16', 'bfloat16'],
  );
  add(
    'd160 bias gqa exact-fwd',
    { B: 1, Hq: 4, Hk: 1, Sq: 65, Sk: 190, D: 160, mask: { kind: 'additive', shape: [1, 4, 65, 190] } },
    ['float16', 'bfloat16'],
  );
  add(
    'd192 window softcap (d256 feature kernel) exact-fwd',
    { B: 1, Hq: 2, Sq: 150, Sk: 200, D: 192, window: [40, 8], softcap: 3 },
    ['float16', 'bfloat16'],
  );
  add('d300 (simt only)', { B: 1, Hq: 1, Sq: 40, Sk: 50, D: 300, Dv: 300 });
  add('misaligned storage (simt)', { B: 2, Hq: 2, Sq: 40, Sk: 60, D: 64, misalign: 'rows' });
  add('bshd layout', { B: 2, Hq: 4, Sq: 77, Sk: 77, D: 64, layout: 'bshd' });
  add('gqa 8/2', { B: 2, Hq: 8, Hk: 2, Sq: 50, Sk: 70, D: 64 });
  add('mqa 4/1', { B: 1, Hq: 4, Hk: 1, Sq: 33, Sk: 65, D: 32 });
  add('causal square', { B: 2, Hq: 2, Sq: 130, Sk: 130, D: 64, causal: 'upperLeft' });
  add('causal ul sq<sk', { B: 1, Hq: 2, Sq: 40, Sk: 150, D: 64, causal: 'upperLeft' });
  add('causal lr sq<sk', { B: 1, Hq: 2, Sq: 40, Sk: 150, D: 64, causal: 'lowerRight' });
  add('causal lr sq>sk (empty rows)', { B: 1, Hq: 2, Sq: 150, Sk: 40, D: 64, causal: 'lowerRight' });
  add('bias full [B,H,Sq,Sk]', {
    B: 2,
    Hq: 2,
    Sq: 60,
    Sk: 90,
    D: 64,
    mask: { kind: 'additive', shape: [2, 2, 60, 90] },
  });
  add('bias [Sq,Sk]', { B: 2, Hq: 2, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [60, 90] } });
  add('bias [B,1,1,Sk] key padding', {
    B: 2,
    Hq: 3,
    Sq: 60,
    Sk: 90,
    D: 64,
    mask: { kind: 'additive', shape: [2, 1, 1, 90] },
  });
  // Masks broadcast along the keys (key stride 0): the kernels read mask rows with stride 1, so the rules
  // decline them and selection falls back (the call materializes nothing behind the caller's back).
  add(
    'bias [H,Sq,1] (declined)',
    { B: 2, Hq: 3, Sq: 60, Sk: 90, D: 32, mask: { kind: 'additive', shape: [3, 60, 1] } },
    ALL,
    'lastDimContiguous',
  );
  add(
    'bias scalar [] (declined)',
    { B: 1, Hq: 2, Sq: 20, Sk: 30, D: 16, mask: { kind: 'additive', shape: [] } },
    ALL,
    'lastDimContiguous',
  );
  add(
    'bias fp32 on half q',
    { B: 1, Hq: 2, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [1, 2, 60, 90], dtype: 'float32' } },
    ['float16', 'bfloat16'],
  );
  add('bias -inf rows', {
    B: 1,
    Hq: 2,
    Sq: 40,
    Sk: 50,
    D: 64,
    mask: { kind: 'additive', shape: [1, 2, 40, 50], fullyMasked: true },
  });
  add('bool mask + fully masked rows', {
    B: 2,
    Hq: 2,
    Sq: 40,
    Sk: 50,
    D: 64,
    mask: { kind: 'bool', shape: [2, 1, 40, 50], fullyMasked: true },
  });
  add('bool mask + causal', {
    B: 1,
    Hq: 2,
    Sq: 64,
    Sk: 64,
    D: 64,
    causal: 'upperLeft',
    mask: { kind: 'bool', shape: [64, 64] },
  });
  // Masks whose rows are 16-byte multiples go through the cp.async mask tile (common/mask_tile.cuh);
  // partial key tiles (Sk not a multiple of the tile) and several query blocks. Broadcast over batch
  // / heads: dbias by atomics in the main kernel (an fp32 accumulator + convert for 16-bit masks).
  add('bias tile [B,H,Sq,Sk] sk144', {
    B: 2,
    Hq: 2,
    Sq: 150,
    Sk: 144,
    D: 64,
    mask: { kind: 'additive', shape: [2, 2, 150, 144] },
  });
  add('bias tile [Sq,Sk] d128 causal lr + dropout + gqa', {
    B: 2,
    Hq: 4,
    Hk: 2,
    Sq: 200,
    Sk: 136,
    D: 128,
    causal: 'lowerRight',
    dropoutP: 0.2,
    mask: { kind: 'additive', shape: [200, 136] },
  });
  add('bool mask tile + mqa', {
    B: 2,
    Hq: 4,
    Hk: 1,
    Sq: 90,
    Sk: 160,
    D: 64,
    mask: { kind: 'bool', shape: [2, 1, 90, 160] },
  });
  add(
    'bias tile fp32 on half q [1,H,Sq,Sk]',
    { B: 2, Hq: 2, Sq: 70, Sk: 96, D: 64, mask: { kind: 'additive', shape: [1, 2, 70, 96], dtype: 'float32' } },
    ['float16', 'bfloat16'],
  );
  // Interior steps of a staged mask add it with one FFMA per score (mask_tile.cuh; forward and
  // tensor-core backward, whose key blocks are 128 wide: Sk >= 256 has interior steps); these cover
  // broadcast rows (row stride 0), head broadcasts, a causal mix of fast and per-element steps, and
  // every tile dtype (bool, 16-bit, fp32 on half q).
  add('bias tile [B,1,1,Sk] key padding sk192 d128', {
    B: 2,
    Hq: 2,
    Sq: 130,
    Sk: 192,
    D: 128,
    mask: { kind: 'additive', shape: [2, 1, 1, 192] },
  });
  add(
    'bias tile [H,1,Sk] fp32 on half q sk256',
    { B: 2, Hq: 3, Sq: 100, Sk: 256, D: 64, mask: { kind: 'additive', shape: [3, 1, 256], dtype: 'float32' } },
    ['float16', 'bfloat16'],
  );
  add('bool tile [B,1,Sq,Sk] causal ul d128', {
    B: 2,
    Hq: 2,
    Sq: 200,
    Sk: 224,
    D: 128,
    causal: 'upperLeft',
    mask: { kind: 'bool', shape: [2, 1, 200, 224] },
  });
  add('bias tile deterministic gqa sk256', {
    B: 2,
    Hq: 4,
    Hk: 2,
    Sq: 100,
    Sk: 256,
    D: 64,
    deterministic: true,
    mask: { kind: 'additive', shape: [1, 4, 100, 256] },
  });
  add('bias tile [1,H,Sq,Sk] -inf rows d128 sk256', {
    B: 2,
    Hq: 2,
    Sq: 130,
    Sk: 256,
    D: 128,
    mask: { kind: 'additive', shape: [1, 2, 130, 256], fullyMasked: true },
  });
  // dbias 4 keys per request (atomic-x4 / direct-x4 in the plan; tensor cores): a key tail inside a
  // 128-key block (Sk = 260), a GQA causal call summed over batch and heads.
  add(
    'bias tile [B,1,Sq,Sk] d128 sk260 dbias x4',
    { B: 2, Hq: 4, Sq: 130, Sk: 260, D: 128, mask: { kind: 'additive', shape: [2, 1, 130, 260] } },
    ['float16', 'bfloat16'],
  );
  add(
    'bias tile [Sq,Sk] gqa causal ul sk200 dbias x4',
    { B: 2, Hq: 4, Hk: 2, Sq: 96, Sk: 200, D: 64, causal: 'upperLeft', mask: { kind: 'additive', shape: [96, 200] } },
    ['float16', 'bfloat16'],
  );
  // The lean backward step (bwd_lean.cuh) on many interior steps (32-query x 128-key, all in bounds):
  // interior mask tiles, ldmatrix.trans mask terms (16-bit), branch-free P / dS, one-address dbias quads;
  // the key tail (keys 256-299) and the last query rows take the general step in the same call.
  add(
    'bias tile [B,1,Sq,Sk] d128 sq256 sk300 lean',
    { B: 2, Hq: 2, Sq: 256, Sk: 300, D: 128, mask: { kind: 'additive', shape: [2, 1, 256, 300] } },
    ['float16', 'bfloat16'],
  );
  add(
    'bias tile [1,H,Sq,Sk] d128 sq200 sk256 causal lean',
    {
      B: 1,
      Hq: 2,
      Sq: 200,
      Sk: 256,
      D: 128,
      causal: 'lowerRight',
      mask: { kind: 'additive', shape: [1, 2, 200, 256] },
    },
    ['float16', 'bfloat16'],
  );
  // The 3xTF32 forward's wide form at d128 (128-query blocks, K and V split once per step; off wgmma only) over several query blocks with a row tail, causal diagonals and a staged bias; D = Dv = 128 and
  // D = 96 (zero columns in the split tiles).
  add(
    'tf32 d128 sq300 sk200 causal lr bias',
    {
      B: 1,
      Hq: 2,
      Sq: 300,
      Sk: 200,
      D: 128,
      causal: 'lowerRight',
      mask: { kind: 'additive', shape: [1, 2, 300, 200], dtype: 'float32' },
    },
    ['float32'],
  );
  add('tf32 d96 sq260 sk333 gqa', { B: 2, Hq: 4, Hk: 2, Sq: 260, Sk: 333, D: 96 }, ['float32']);
  add(
    'bias tile [1,H,Sq,Sk] deterministic sk256 d128',
    { B: 2, Hq: 2, Sq: 70, Sk: 256, D: 128, deterministic: true, mask: { kind: 'additive', shape: [1, 2, 70, 256] } },
    ['float16', 'bfloat16'],
  );
  add('dropout 0.2', { B: 2, Hq: 2, Sq: 70, Sk: 90, D: 64, dropoutP: 0.2 });
  add('dropout + causal + bias', {
    B: 1,
    Hq: 2,
    Sq: 70,
    Sk: 90,
    D: 64,
    dropoutP: 0.3,
    causal: 'lowerRight',
    mask: { kind: 'additive', shape: [70, 90] },
  });
  add('long q few keys (query splits)', { B: 1, Hq: 1, Sq: 2048, Sk: 40, D: 64 });
  add('deterministic', {
    B: 2,
    Hq: 4,
    Hk: 2,
    Sq: 100,
    Sk: 130,
    D: 64,
    deterministic: true,
    mask: { kind: 'additive', shape: [1, 4, 100, 130] },
  });
  add('deterministic simt', { B: 2, Hq: 4, Hk: 2, Sq: 100, Sk: 130, D: 64, deterministic: true, path: 'simt' }, [
    'float16',
    'bfloat16',
  ]);
  add('long q few keys, tensor cores (splits)', { B: 1, Hq: 2, Sq: 3000, Sk: 100, D: 128, causal: 'lowerRight' }, [
    'float16',
    'bfloat16',
  ]);
  add('simt forced', { B: 2, Hq: 2, Sq: 100, Sk: 130, D: 64, path: 'simt', causal: 'upperLeft' }, [
    'float16',
    'bfloat16',
  ]);
  add(
    'simt forced + bias + dropout + gqa',
    {
      B: 2,
      Hq: 4,
      Hk: 2,
      Sq: 70,
      Sk: 90,
      D: 128,
      path: 'simt',
      dropoutP: 0.2,
      mask: { kind: 'additive', shape: [2, 4, 70, 90] },
    },
    ['float16', 'bfloat16'],
  );
  add('mma forced', { B: 2, Hq: 2, Sq: 100, Sk: 130, D: 128, path: 'mma', causal: 'upperLeft' }, [
    'float16',
    'bfloat16',
  ]);
  add('S=1000 d128', { B: 1, Hq: 2, Sq: 1000, Sk: 1000, D: 128, causal: 'upperLeft' });
  // Issue 21: the seeds' features over several key blocks (the window skips blocks on both sides), on the
  // tensor-core kernels and, forced, the FMA ones; varlen with empty sequences; sequsedK.
  add('window 50,10 alibi softcap gqa', {
    B: 1,
    Hq: 4,
    Hk: 2,
    Sq: 200,
    Sk: 260,
    D: 64,
    window: [50, 10],
    alibi: 'perHead',
    softcap: 4,
  });
  add('window lr causal bias dropout d128', {
    B: 2,
    Hq: 2,
    Sq: 190,
    Sk: 130,
    D: 128,
    window: [40, -1],
    causal: 'lowerRight',
    dropoutP: 0.2,
    mask: { kind: 'additive', shape: [2, 1, 190, 130] },
  });
  add('window right bool mask softcap', {
    B: 1,
    Hq: 2,
    Sq: 150,
    Sk: 150,
    D: 64,
    window: [-1, 20],
    softcap: 2,
    mask: { kind: 'bool', shape: [150, 150] },
  });
  add('window lr alibi [B,H] sequsedK', {
    B: 2,
    Hq: 2,
    Hk: 1,
    Sq: 120,
    Sk: 300,
    D: 64,
    window: [30, 30],
    alignment: 'lowerRight',
    alibi: 'perBatchHead',
    sequsedK: [170, 0],
  });
  add('window d96 bias dbias gqa (tf32 d128 bucket)', {
    B: 2,
    Hq: 4,
    Hk: 2,
    Sq: 260,
    Sk: 333,
    D: 96,
    window: [64, 16],
    mask: { kind: 'additive', shape: [1, 4, 260, 333] },
  });
  add(
    'simt forced window alibi softcap dropout',
    {
      B: 1,
      Hq: 2,
      Sq: 100,
      Sk: 130,
      D: 64,
      path: 'simt',
      window: [20, 5],
      alibi: 'perHead',
      softcap: 3,
      dropoutP: 0.2,
    },
    ['float16', 'bfloat16'],
  );
  add('deterministic window softcap sequsedK', {
    B: 2,
    Hq: 4,
    Hk: 2,
    Sq: 100,
    Sk: 200,
    D: 64,
    deterministic: true,
    window: [40, 0],
    softcap: 5,
    sequsedK: [150, 37],
  });
  add('varlen window alibi softcap dropout sequsedK (empty sequences)', {
    B: 4,
    Hq: 4,
    Hk: 2,
    Sq: 201,
    Sk: 260,
    D: 64,
    varlen: { q: [150, 0, 70, 201], k: [180, 40, 0, 260] },
    window: [60, 5],
    alignment: 'lowerRight',
    alibi: 'perHead',
    softcap: 3,
    dropoutP: 0.1,
    sequsedK: [100, 40, 0, 260],
  });
  // Softcap and ALiBi without a window or mask: most steps are in view and take ModRule (tile_mods_only),
  // the diagonal and edge steps the per-element rule.
  add('alibi softcap causal lr gqa (in view)', {
    B: 1,
    Hq: 4,
    Hk: 2,
    Sq: 300,
    Sk: 333,
    D: 64,
    alibi: 'perHead',
    softcap: 5,
    causal: 'lowerRight',
  });
  add('alibi [B,H] d128 (in view)', { B: 2, Hq: 2, Sq: 260, Sk: 390, D: 128, alibi: 'perBatchHead' });
  add('softcap d96 ul sq>sk (in view)', { B: 1, Hq: 2, Sq: 200, Sk: 150, D: 96, softcap: 2, causal: 'upperLeft' });
  // Features without softcap or ALiBi and without a mask: the fp32 feature kernels built without their code
  // (kMods = false), forward and backward, at both buckets.
  add('window 40,8 d64 (no score mods)', { B: 1, Hq: 2, Sq: 300, Sk: 333, D: 64, window: [40, 8] });
  add('window 100,-1 sequsedK d128 (no score mods)', {
    B: 2,
    Hq: 2,
    Sq: 260,
    Sk: 300,
    D: 128,
    window: [100, -1],
    sequsedK: [250, 90],
  });
  // Large softcaps keep every tanh argument of a warp below 0.6: the fp32 kernels' in-view steps take the
  // polynomial alone (ModRule::tanh_args), with ALiBi and without; the edge steps tanhf.
  add('softcap 30 d64 (in view, tanh polynomial)', { B: 1, Hq: 2, Sq: 300, Sk: 333, D: 64, softcap: 30 });
  // The fp32 d64 backward's softcap form (softcap without ALiBi or a mask: tanh and P taken ahead of dP^T,
  // bwd/softcap_ahead.cuh): its steps ahead (softcap 30), its warps that fall back to tanhf (softcap 3: some
  // arguments above 0.6) and its steps left to the general rule (varlen ends, the diagonal, dropout).
  add(
    'softcap 30 d64 varlen causal lr gqa (softcap form)',
    {
      B: 3,
      Hq: 4,
      Hk: 2,
      Sq: 300,
      Sk: 333,
      D: 64,
      varlen: { q: [300, 0, 129], k: [333, 17, 200] },
      causal: 'lowerRight',
      softcap: 30,
    },
    ['float32'],
  );
  add('softcap 3 d64 dropout (softcap form)', { B: 2, Hq: 2, Sq: 200, Sk: 260, D: 64, softcap: 3, dropoutP: 0.1 }, [
    'float32',
  ]);
  add('softcap 3 d64 gqa (softcap form, tanhf warps)', { B: 1, Hq: 4, Hk: 2, Sq: 257, Sk: 320, D: 64, softcap: 3 }, [
    'float32',
  ]);
  add('softcap 50 alibi d128 (in view, tanh polynomial)', {
    B: 2,
    Hq: 2,
    Sq: 260,
    Sk: 390,
    D: 128,
    softcap: 50,
    alibi: 'perHead',
  });
  // The feature kernels (kFeat) on the column-split backward (head dims above 128): window, ALiBi,
  // softcap, varlen and sequsedK with the dK/dV/dQ columns split over two blocks.
  add(
    'd160 col-split window alibi softcap gqa',
    { B: 1, Hq: 4, Hk: 2, Sq: 170, Sk: 300, D: 160, window: [70, 20], alibi: 'perHead', softcap: 4 },
    ['float16', 'bfloat16'],
  );
  add(
    'd192 col-split window lr dropout sequsedK',
    {
      B: 2,
      Hq: 2,
      Sq: 120,
      Sk: 280,
      D: 192,
      window: [50, -1],
      alignment: 'lowerRight',
      causal: 'lowerRight',
      dropoutP: 0.15,
      sequsedK: [200, 9],
    },
    ['float16', 'bfloat16'],
  );
  add(
    'd256 col-split varlen alibi [B,H] softcap (empty sequences)',
    {
      B: 3,
      Hq: 2,
      Hk: 1,
      Sq: 190,
      Sk: 260,
      D: 256,
      varlen: { q: [190, 0, 70], k: [260, 30, 0] },
      alibi: 'perBatchHead',
      softcap: 3,
      causal: 'lowerRight',
    },
    ['float16', 'bfloat16'],
  );
  add(
    'd256 dv128 col-split deterministic window bias',
    {
      B: 1,
      Hq: 2,
      Sq: 150,
      Sk: 200,
      D: 256,
      Dv: 128,
      deterministic: true,
      window: [30, 30],
      mask: { kind: 'additive', shape: [1, 2, 150, 200] },
    },
    ['float16', 'bfloat16'],
  );
  add('varlen causal d128 (query splits)', {
    B: 3,
    Hq: 2,
    Sq: 1500,
    Sk: 64,
    D: 128,
    varlen: { q: [1500, 7, 900], k: [64, 33, 0] },
    causal: 'lowerRight',
  });

  return cases;
}
