#!/usr/bin/env node
// Writes native/src/instantiations/: one .cu per forward kernel configuration, and fwd_configs.inc, the
// list dispatch.cu builds its table from. The table below is the only place tile shapes are chosen.
//
//   node scripts/generate-instantiations.mjs           # (re)write the files
//   node scripts/generate-instantiations.mjs --check   # exit 1 if the files are stale (run by the tests)
//
// Per head-dim bucket two shapes with every feature (FlashAttention-2's choices for sm80/sm90):
//   'large': kBlockM 128; 4 warps x 32 rows up to D=128, 8 warps x 16 rows above (smem <= 128 KB).
//   'small': kBlockM 64, 4 warps x 16 rows (smem <= 96 KB): short queries and decode (split-KV), and
//            GPUs whose opt-in shared memory per block is ~100 KB (sm86, sm89) where 'large' does not fit.
// and, for the head dims the standard grid uses, a lean kernel (no ALiBi, softcap, dropout or left window
// bound compiled in; causal, right window, varlen, GQA and split-KV stay) with the registers that frees
// spent on FA2's larger key tiles:
//   'lean':  chosen instead of 'large' for calls without those features;
//   'lean_small': FA2's split-KV tile for D=128 (64 x 128, twice the bytes in flight per CTA of the 64 x 64
//            'small' tile, 218 registers without Q in registers); chosen instead of 'small' for lean calls
//            (decode: 70.6 us against 'small's 76.2 at 4 splits, H200, with the shared-memory carveout of v3).
//   'alt':   a lean alternative shape, never chosen automatically; benches and the GPU check force it by
//            name (flashForward(params, { kernel })) to compare tile shapes in one GPU run.
// Lean D=64 keeps Q in registers (238 registers, no spills; one ldmatrix in four fewer per key tile);
// FA2's 128x128 for D=64 spills ~200 bytes here (S 128 + O 64 accumulators per thread), so it is not built.
// qRegs: keep the Q fragments in registers for the whole key loop (where registers allow).
// dtypes: optional, the dtypes to instantiate (default both).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeGenerated } from './lib/write-generated.mjs';

export const CONFIGS = [
  // headDim, variant, blockM, blockN, warps, qRegs[, dtypes]
  [32, 'large', 128, 64, 4, true],
  [32, 'small', 64, 128, 4, true],
  [64, 'large', 128, 64, 4, false],
  [64, 'small', 64, 128, 4, false],
  [96, 'large', 128, 64, 4, false],
  [96, 'small', 64, 64, 4, true],
  [128, 'large', 128, 32, 4, false],
  [128, 'small', 64, 64, 4, true],
  [160, 'large', 128, 64, 8, true],
  [160, 'small', 64, 64, 4, true],
  [192, 'large', 128, 64, 8, false],
  [192, 'small', 64, 64, 4, false],
  [224, 'large', 128, 64, 8, false],
  [224, 'small', 64, 32, 4, false],
  [256, 'large', 128, 64, 8, false],
  [256, 'small', 64, 32, 4, false],
  [64, 'lean', 128, 64, 4, true],
  [128, 'lean', 128, 64, 4, false],
  [256, 'lean', 128, 64, 8, false],
  [128, 'lean_small', 64, 128, 4, false],
  [64, 'alt', 128, 64, 4, false, ['bf16']],
  [128, 'alt', 128, 32, 4, false, ['bf16']],
];
/**
 * The Hopper kernels (FwdSm90Traits, native/src/sm90/): both GEMMs on wgmma, the lean feature set, one
 * warpgroup per 64 query rows. dispatch.cu picks them on sm90 devices (when the addon holds sm_90a code)
 * for every call the lean kernel could run without split-KV or packed GQA:
 *   'sm90ws': warp-specialized (flash_fwd_sm90_ws_kernel.h: a producer warpgroup, a 3-stage K/V ring, the
 *            two consumer warpgroups alternating on the tensor cores), 128 x 128 at D=64 and D=128 (3 stages
 *            fit at D <= 128 only: 226 KB of the 227 KB at D=128). Measured (H200) 1.20-1.36x 'sm90' at
 *            S >= 4k, 1.0-1.24x at S=1k.
 *   'sm90':  every thread loads, two stages, one barrier per key tile: D=256 (128 x 64, 193 KB), and D=64
 *            (128 x 64 at 2 CTAs/SM, 112 registers) / D=128 (128 x 128) under ATTN_FLASH_FWD_KERNEL=sm90.
 *   'sm90_alt': forced-only tiles the benches compare by name (D=64 128 x 128, D=128 128 x 64).
 * ATTN_FLASH_FWD_KERNEL=sm80 runs no Hopper kernel at all.
 */
export const SM90_CONFIGS = [
  // headDim, variant, blockM, blockN, minBlocksPerSm[, dtypes[, warpSpecialized]]
  // Within a head dim the first runnable automatic entry wins: 'sm90ws' where it fits, then 'sm90'.
  [64, 'sm90ws', 128, 128, 1, null, true],
  [128, 'sm90ws', 128, 128, 1, null, true],
  [64, 'sm90', 128, 64, 2],
  [128, 'sm90', 128, 128, 1],
  [256, 'sm90', 128, 64, 1],
  [64, 'sm90_alt', 128, 128, 1, ['bf16']],
  [128, 'sm90_alt', 128, 64, 1, ['bf16']],
];
export const SM90_AUTO_VARIANTS = new Set(['sm90ws', 'sm90']);
/**
 * The decode kernel (DecodeTraits, native/src/flash_fwd_decode_kernel.h): 16 query rows shared by every
 * warp, the warps splitting the keys, each with its own cp.async ring of K/V stages; lean feature set.
 * Forced-only: measured (H200, decode B 8 Hq 32 Hk 8 Sk 8192 D 128) it does not beat 'lean_small' (best
 * 72.6 us against 70.4-70.6; NOTES.md, "Decode kernel"), so the benches compare it by name. The variant
 * names give the shape: k<keys per warp tile>s<stages per warp>w<warps per CTA>.
 */
export const DECODE_CONFIGS = [
  // headDim, variant, keysPerWarpTile, stages, warps, dtypes
  [128, 'decode_k16s3w4', 16, 3, 4, ['bf16']],
  [128, 'decode_k32s2w2', 32, 2, 2, ['bf16']],
];
/** Decode variants dispatch.cu may choose on its own (for lean calls with packed rows <= 16): none yet. */
export const DECODE_AUTO_VARIANTS = new Set([]);
/** Variants compiled without the extra features (FwdTraits kExtras = false). */
export const LEAN_VARIANTS = new Set(['lean', 'lean_small', 'alt']);
/**
 * Variants dispatch.cu may choose on its own; the others run only when forced by name. 'lean_small' was
 * forced-only in version 3 (197 us CLI decode in version 2, when 80 KB CTAs ran one per SM under the
 * driver's default carveout); with the carveout set it measured 70.6 us against 'small's 76.2 (version 4).
 */
export const AUTO_VARIANTS = new Set(['large', 'small', 'lean', 'lean_small']);
export const DTYPES = [
  ['fp16', '__half'],
  ['bf16', '__nv_bfloat16'],
];

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '..', 'native', 'src', 'instantiations');
const banner = '// Generated by scripts/generate-instantiations.mjs; do not edit.\n';

export function generatedFiles() {
  const files = new Map();
  const list = [];
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, m, n, w, qRegs, dtypes] of CONFIGS) {
      if (dtypes && !dtypes.includes(dname)) continue;
      const extras = !LEAN_VARIANTS.has(variant);
      const traits = `attn::flash::FwdTraits<${d}, ${m}, ${n}, ${w}, ${qRegs}, ${ctype}, ${extras}>`;
      files.set(
        `fwd_${dname}_d${d}_${variant}.cu`,
        `${banner}#include "../flash_fwd_launch.h"\n\n` +
          `template void attn::flash::run_fwd<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);\n`,
      );
      list.push(
        `ATTN_FWD_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${m}, ${n}, ${w}, ${qRegs}, ${ctype}, ${extras}, "${dname}_d${d}_${variant}", ${AUTO_VARIANTS.has(variant)})`,
      );
    }
  }
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, m, n, minBlocks, dtypes, ws = false] of SM90_CONFIGS) {
      if (dtypes && !dtypes.includes(dname)) continue;
      const traits = `attn::flash::FwdSm90Traits<${d}, ${m}, ${n}, ${minBlocks}, ${ctype}, ${ws}>`;
      files.set(
        `fwd_${dname}_d${d}_${variant}.cu`,
        `${banner}#include "../sm90/flash_fwd_sm90_launch.h"\n\n` +
          `template void attn::flash::run_fwd_sm90<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);\n`,
      );
      list.push(
        `ATTN_FWD_SM90_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${m}, ${n}, ${minBlocks}, ${ctype}, ${ws}, "${dname}_d${d}_${variant}", ${SM90_AUTO_VARIANTS.has(variant)})`,
      );
    }
  }
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, keys, stages, warps, dtypes] of DECODE_CONFIGS) {
      if (dtypes && !dtypes.includes(dname)) continue;
      const traits = `attn::flash::DecodeTraits<${d}, ${keys}, ${stages}, ${warps}, ${ctype}>`;
      files.set(
        `fwd_${dname}_d${d}_${variant}.cu`,
        `${banner}#include "../flash_fwd_decode_launch.h"\n\n` +
          `template void attn::flash::run_fwd_decode<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);\n`,
      );
      list.push(
        `ATTN_FWD_DECODE_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${keys}, ${stages}, ${warps}, ${ctype}, "${dname}_d${d}_${variant}", ${DECODE_AUTO_VARIANTS.has(variant)})`,
      );
    }
  }
  files.set(
    'fwd_configs.inc',
    `${banner}// ATTN_FWD_CONFIG(is_bf16, head_dim, block_m, block_n, warps, q_in_regs, element, extras, name, auto_select)\n` +
      `// ATTN_FWD_SM90_CONFIG(is_bf16, head_dim, block_m, block_n, min_blocks_per_sm, element, warp_specialized, name, auto_select)\n` +
      `// ATTN_FWD_DECODE_CONFIG(is_bf16, head_dim, keys_per_warp_tile, stages, warps, element, name, auto_select)\n` +
      `// Within one (dtype, head_dim), the 'large' shape comes first.\n${list.join('\n')}\n`,
  );
  return files;
}

function main() {
  const check = process.argv.includes('--check');
  const files = generatedFiles();
  // Only the forward files are this script's: other generators (backward) share the folder.
  writeGenerated({ outDir, files, owns: (f) => f.startsWith('fwd_') && (f.endsWith('.cu') || f.endsWith('.inc')), check, label: 'instantiations', script: 'scripts/generate-instantiations.mjs' });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
