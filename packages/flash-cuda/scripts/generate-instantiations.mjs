#!/usr/bin/env node
// Writes native/src/generated/fwd_*: the forward kernel instantiations, and fwd_configs.inc, the list
// dispatch.cu builds its table from. The table below is the only place tile shapes are chosen.
// One .cu per (dtype, head dim) holds every mma.sync variant of that bucket, and one per dtype the Hopper
// kernels: each nvcc run pays a fixed cost (headers through the host front end, cudafe++, the host
// compile, about 3 CPU-s here) that one file per kernel paid 48 times; four D64 kernels in one file take
// half the CPU time of four files (10.1 s against 19.8 s, sm_90a). Files stay small enough to keep a
// 2-core build's two jobs busy to the end.
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
//            (decode: 70.6 us against 'small's 76.2 at 4 splits, H200; docs/perf/flash-cuda.md); at D=64
//            'small's 64 x 128 without the extras (168 registers against 224: D 64 decode 39.7 us against 41.3,
//            tiny calls 0.3 us faster per replayed call, H200).
// Lean D=64 keeps Q in registers (238 registers, no spills; one ldmatrix in four fewer per key tile);
// FA2's 128x128 for D=64 spills ~200 bytes here (S 128 + O 64 accumulators per thread), so it is not built.
// Every configuration here is one the dispatcher picks for some device and call: a shape that measures
// slower everywhere it could run is deleted, not kept for forcing.
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
  [64, 'lean_small', 64, 128, 4, false],
  [128, 'lean_small', 64, 128, 4, false],
];
/**
 * The Hopper kernel (FwdSm90Traits, native/src/sm90/flash_fwd_sm90_ws_kernel.h): both GEMMs on wgmma, the lean
 * feature set, a producer warpgroup loading K/V into a ring and two consumer warpgroups of 64 query rows
 * alternating on the tensor cores. dispatch.cu picks it on sm90 devices (when the addon holds sm_90a code) for
 * every call the lean kernel could run without split-KV or packed GQA. 128 x 128 with 3 stages at D=64 and
 * D=128 (226 KB at D=128), 128 x 64 with 2 stages at D=256 (193 KB). splitRelease: K and V released on
 * mbarriers of their own. Measured (H200, forced tiles, bf16, S 1k-16k): at D=256 1.22-1.34x the joint release's
 * speed and 1.27x the two-stage all-threads kernel it replaced, which the joint release lost to (0.80x); at
 * D=128 1.01-1.04x the joint release; at D=64 0.97x, so D=64 keeps the joint release.
 * 'sm90ws_rows64' (D=64): one consumer warpgroup of 64 query rows per CTA, two CTAs per SM (105 KB each), its
 * producer the TMA thread alone (dense calls only): where a query block sees few key tiles, one CTA's fill and
 * drain run under the other's GEMMs. Against 'sm90ws' (H200, bf16, B*S 16k, H 32): S 1k 1.10x non-causal and
 * 1.11x causal, causal 4k 1.06x, non-causal 4k 0.99-1.03x, S 16k 0.97-0.99x; dispatch.cu picks it where a row
 * sees at most 2048 keys on average.
 */
export const SM90_CONFIGS = [
  // headDim, variant, blockM, blockN, minBlocksPerSm, dtypes, splitRelease
  [64, 'sm90ws', 128, 128, 1, null, false],
  [64, 'sm90ws_rows64', 64, 128, 2, null, false],
  [128, 'sm90ws', 128, 128, 1, null, true],
  [256, 'sm90ws', 128, 64, 1, null, true],
];
/**
 * The decode kernel (DecodeTraits, native/src/fwd/flash_fwd_decode_kernel.h): one 16-row query tile, a warp per
 * 16 keys of each key tile, a ring of `stages` K/V tiles in flight. dispatch.cu picks it for lean calls whose
 * packed query rows fit 16 (decode steps, GQA heads packed), where the 64-row tile's two buffers drain at every
 * key tile. 'decode': 64-key tiles, 4 warps; D 128 3 stages (100 KB, two CTAs per SM), D 64 4 stages (66 KB).
 * Measured against 4 stages at D 128 (one CTA per SM: decode 67.9 us against 66.8 at its best split count, paged
 * 1.3x slower) and 6 at D 64 (1.03x slower over the short-call sweep's D 64 shapes). 'decode_wide' (D 128 only):
 * 128-key tiles, 8 warps, 3 stages (204 KB, one CTA per SM), the plan's for paged K/V where its grid is one wave:
 * paged decode 66.8-67.5 us at 2 splits against 68.3-69.2 for 'decode' at 4 (blocks 16-256); over strided K/V
 * 65.2-65.3 against 64.1-66.3, so dense calls keep 'decode'. H200 (docs/perf/flash-cuda.md).
 */
export const DECODE_CONFIGS = [
  // headDim, variant, blockN, stages
  [64, 'decode', 64, 4],
  [128, 'decode', 64, 3],
  [128, 'decode_wide', 128, 3],
];
/** Variants compiled without the extra features (FwdTraits kExtras = false). */
export const LEAN_VARIANTS = new Set(['lean', 'lean_small']);
export const DTYPES = [
  ['fp16', '__half'],
  ['bf16', '__nv_bfloat16'],
];

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '..', 'native', 'src', 'generated');
const banner = '// Generated by scripts/generate-instantiations.mjs; do not edit.\n';

/** Appends `line` to the file `name` (created with its #include on first use). */
function addTo(files, name, include, line) {
  files.set(name, (files.get(name) ?? `${banner}#include "${include}"\n\n`) + line);
}

export function generatedFiles() {
  const files = new Map();
  const list = [];
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, m, n, w, qRegs, dtypes] of CONFIGS) {
      if (dtypes && !dtypes.includes(dname)) continue;
      const extras = !LEAN_VARIANTS.has(variant);
      const traits = `attn::flash::FwdTraits<${d}, ${m}, ${n}, ${w}, ${qRegs}, ${ctype}, ${extras}>`;
      addTo(
        files,
        `fwd_${dname}_d${d}.cu`,
        'launch/flash_fwd_launch.h',
        `template void attn::flash::run_fwd<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);  // ${variant}\n`,
      );
      list.push(
        `ATTN_FWD_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${m}, ${n}, ${w}, ${qRegs}, ${ctype}, ${extras}, "${dname}_d${d}_${variant}")`,
      );
    }
  }
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, m, n, minBlocks, dtypes, splitRelease] of SM90_CONFIGS) {
      if (dtypes && !dtypes.includes(dname)) continue;
      const traits = `attn::flash::FwdSm90Traits<${d}, ${m}, ${n}, ${minBlocks}, ${ctype}, ${splitRelease}>`;
      addTo(
        files,
        `fwd_sm90_${dname}.cu`,
        'sm90/flash_fwd_sm90_launch.h',
        `template void attn::flash::run_fwd_sm90<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);  // d${d} ${variant}\n`,
      );
      list.push(
        `ATTN_FWD_SM90_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${m}, ${n}, ${minBlocks}, ${ctype}, ${splitRelease}, "${dname}_d${d}_${variant}")`,
      );
    }
  }
  for (const [dname, ctype] of DTYPES) {
    for (const [d, variant, n, stages] of DECODE_CONFIGS) {
      const traits = `attn::flash::DecodeTraits<${d}, ${n}, ${stages}, ${ctype}>`;
      addTo(
        files,
        `fwd_decode_${dname}.cu`,
        'launch/flash_fwd_decode_launch.h',
        `template void attn::flash::run_fwd_decode<${traits}>(const attn::flash::FwdParams&, cudaStream_t, int);  // d${d} ${variant}\n`,
      );
      list.push(
        `ATTN_FWD_DECODE_CONFIG(${dname === 'bf16' ? 1 : 0}, ${d}, ${n}, ${stages}, ${ctype}, "${dname}_d${d}_${variant}")`,
      );
    }
  }
  files.set(
    'fwd_configs.inc',
    `${banner}// ATTN_FWD_CONFIG(is_bf16, head_dim, block_m, block_n, warps, q_in_regs, element, extras, name)\n` +
      `// ATTN_FWD_SM90_CONFIG(is_bf16, head_dim, block_m, block_n, min_blocks_per_sm, element, split_release, name)\n` +
      `// ATTN_FWD_DECODE_CONFIG(is_bf16, head_dim, block_n, stages, element, name)\n` +
      `// Within one (dtype, head_dim), the 'large' shape comes first.\n${list.join('\n')}\n`,
  );
  return files;
}

function main() {
  const check = process.argv.includes('--check');
  const files = generatedFiles();
  // Only the forward files are this script's: other generators (backward) share the folder.
  writeGenerated({
    outDir,
    files,
    owns: (f) => f.startsWith('fwd_') && (f.endsWith('.cu') || f.endsWith('.inc')),
    check,
    label: 'instantiations',
    script: 'scripts/generate-instantiations.mjs',
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
