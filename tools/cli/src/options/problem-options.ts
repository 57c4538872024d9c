// The options shared by explain, run and bench, and how they become a ProblemSpec.
import { FLOAT_DTYPES, type Alignment, type DeviceLike, type FloatDType, type QkvDType } from '@attn/core';
import { Option, type Command } from 'commander';
import type { Features, MaskKind, ProblemSpec } from '../problem.js';
import {
  parseDevice,
  parseNameList,
  parseNonNegativeInt,
  parsePositiveInt,
  parsePositiveNumber,
  parseProbability,
  parseShape,
  parseWindow,
} from './parse.js';

export interface FeatureFlags {
  dtype?: QkvDType;
  device?: DeviceLike;
  alignment: 'upper-left' | 'lower-right';
  mask?: MaskKind;
  dropout?: number;
  window?: [number, number];
  alibi?: boolean;
  softcap?: number;
  gqa?: boolean;
  requiresGrad?: boolean;
  seed: number;
  backends?: string[];
  kernel?: string;
  /** bench only: --varlen, --index-values-on-device, --out. */
  varlen?: boolean;
  indexValuesOnDevice?: boolean;
  out?: boolean;
}

export interface ShapeFlags extends FeatureFlags {
  shape: [number, number, number, number];
  kvHeads?: number;
  seqK?: number;
  dv?: number;
  causal?: boolean;
}

/** dtype, device, alignment, mask, dropout, window, alibi, softcap, gqa, requires-grad, seed, backends. */
export function addFeatureOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--dtype <dtype>',
        'element type (default: float32 on the CPU, bfloat16 on a GPU); float8_e4m3: inputs in e4m3 (descale 1), bfloat16 out, forward only',
      ).choices([...FLOAT_DTYPES, 'float8_e4m3']),
    )
    .addOption(
      new Option(
        '--device <device>',
        'cpu, cuda, cuda:N, rocm or rocm:N (default: the first GPU present, else cpu)',
      ).argParser(parseDevice),
    )
    .addOption(
      new Option('--alignment <where>', 'anchor of the causal diagonal, window and ALiBi when Sq != Sk')
        .choices(['upper-left', 'lower-right'])
        .default('upper-left'),
    )
    .addOption(new Option('--mask <kind>', 'add a random attention mask [B,1,Sq,Sk]').choices(['bool', 'additive']))
    .addOption(new Option('--dropout <p>', 'dropout probability in [0, 1)').argParser(parseProbability))
    .addOption(
      new Option('--window <left,right>', 'sliding window in keys around the diagonal (-1 = unbounded)').argParser(
        parseWindow,
      ),
    )
    .addOption(new Option('--alibi', 'add ALiBi slopes (2^(-8(h+1)/H))'))
    .addOption(new Option('--softcap <x>', 'soft-cap the scores: x * tanh(s / x)').argParser(parsePositiveNumber))
    .addOption(new Option('--gqa', 'allow fewer key/value heads than query heads (grouped-query attention)'))
    .addOption(new Option('--requires-grad', 'the call will be followed by a backward (backends without one decline)'))
    .addOption(
      new Option('--seed <n>', 'seed of the random inputs and of dropout').argParser(parseNonNegativeInt).default(0),
    )
    .addOption(
      new Option(
        '--backends <names>',
        'restrict (and order) the candidate backends, e.g. cpu-flash,cpu-math',
      ).argParser(parseNameList),
    )
    .addOption(
      new Option(
        '--kernel <name>',
        'run this kernel family of the backend that declares it (`attn doctor` lists them: e.g. sm90 or sm80 on flash-cuda, avx2 on cpu-flash)',
      ),
    );
}

/** --shape (required), --kv-heads, --seq-k, --dv, --causal, then the feature options. */
export function addShapeOptions(cmd: Command): Command {
  cmd
    .addOption(
      new Option('--shape <B,H,S,D>', 'batch, query heads, sequence length, head dim, e.g. 1,8,512,64')
        .argParser(parseShape)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--kv-heads <n>', 'key/value heads (default: H; fewer needs --gqa)').argParser(parsePositiveInt),
    )
    .addOption(new Option('--seq-k <n>', 'key/value sequence length (default: S)').argParser(parsePositiveInt))
    .addOption(new Option('--dv <n>', 'value head dim (default: D)').argParser(parsePositiveInt))
    .addOption(new Option('--causal', 'causal masking'));
  return addFeatureOptions(cmd);
}

export function featuresFrom(f: FeatureFlags, causal: boolean): Features {
  const alignment: Alignment = f.alignment === 'lower-right' ? 'lowerRight' : 'upperLeft';
  return {
    causal,
    alignment,
    mask: f.mask ?? null,
    dropoutP: f.dropout ?? 0,
    window: f.window ?? null,
    alibi: f.alibi ?? false,
    softcap: f.softcap ?? 0,
    enableGqa: f.gqa ?? false,
    requiresGrad: f.requiresGrad ?? false,
    varlen: f.varlen ?? false,
    indexValuesOnDevice: f.indexValuesOnDevice ?? false,
    out: f.out ?? false,
    kernel: f.kernel ?? null,
  };
}

export function defaultDType(device: DeviceLike): FloatDType {
  const type = typeof device === 'string' ? device.split(':')[0] : device.type;
  return type === 'cpu' ? 'float32' : 'bfloat16';
}

/** `device` is the resolved device (the flag, or the default when none was given). */
export function problemFrom(f: ShapeFlags, device: DeviceLike): ProblemSpec {
  const [batch, headsQ, seqQ, headDim] = f.shape;
  return {
    ...featuresFrom(f, f.causal ?? false),
    batch,
    headsQ,
    headsKV: f.kvHeads ?? headsQ,
    seqQ,
    seqK: f.seqK ?? seqQ,
    headDim,
    headDimV: f.dv ?? headDim,
    dtype: f.dtype ?? defaultDType(device),
    device,
    seed: f.seed,
  };
}
