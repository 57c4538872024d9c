// @attn/cuda/testing: attn's dropout Philox evaluated on the GPU by the addon's test kernels, for
// bit-equality tests against core's TypeScript Philox (and for kernel packages' own dropout tests).
import { AttnInputError, DeviceError } from '@attn/core';
import { cuda } from './cuda-runtime.js';
import { callNative } from './errors.js';
import { checkUint32 } from './validate.js';

/** Largest output of the test kernels (native/src/philox_fill.h). */
export const MAX_PHILOX_FILL_ELEMENTS = 1 << 26;

/**
 * Philox4x32-10 on the device for each item of `inputs` (6 words per item: counter x, y, z, w, key
 * k0, k1). Returns 4 output words per item.
 */
export function philoxOnDevice(inputs: Uint32Array, device = 0): Uint32Array {
  const addon = cuda.native.require();
  cuda.checkIndex(device);
  checkPhiloxInputs('philoxOnDevice', inputs);
  return callNative(() => addon.philoxRaw(device, inputs));
}

/**
 * The same as philoxOnDevice, computed by attn/philox.h's host path inside the addon: needs the
 * addon but no device. Throws DeviceError when the addon is not built.
 */
export function philoxOnHostNative(inputs: Uint32Array): Uint32Array {
  const { load } = cuda.native.state();
  if (!load.ok) throw new DeviceError('ATTN_DEVICE_UNAVAILABLE', `@attn/cuda cannot run this: ${load.reason}`);
  checkPhiloxInputs('philoxOnHostNative', inputs);
  return callNative(() => load.addon.philoxRawHost(inputs));
}

function checkPhiloxInputs(what: string, inputs: Uint32Array): void {
  if (!(inputs instanceof Uint32Array) || inputs.length % 6 !== 0) {
    throw new AttnInputError('ATTN_BAD_ARGUMENT', `${what} takes a Uint32Array of 6 words per item.`);
  }
  if (inputs.length / 6 > MAX_PHILOX_FILL_ELEMENTS) {
    throw new AttnInputError('ATTN_SIZE', `${what}: at most ${MAX_PHILOX_FILL_ELEMENTS} items per call.`);
  }
}

export interface DropoutWordsOptions {
  readonly seed: bigint;
  readonly offset: number;
  /** B * Hq */
  readonly bhCount: number;
  readonly seqQ: number;
  readonly seqK: number;
  /** From core's dropoutThreshold(p). */
  readonly threshold: number;
  readonly device?: number;
}

/**
 * For every element (bh, i, j) of a [bhCount, seqQ, seqK] score tensor, the Philox word that decides
 * its dropout and whether it is kept, computed by the device code in attn/philox.h.
 */
export function dropoutWordsOnDevice(o: DropoutWordsOptions): { words: Uint32Array; keep: Uint8Array } {
  const addon = cuda.native.require();
  const device = cuda.checkIndex(o.device ?? 0);
  if (typeof o.seed !== 'bigint' || o.seed < 0n || o.seed >= 1n << 64n) {
    throw new AttnInputError('ATTN_BAD_ARGUMENT', `seed must be a bigint in [0, 2^64), got ${String(o.seed)}.`);
  }
  const offset = checkUint32('offset', o.offset);
  const bh = checkUint32('bhCount', o.bhCount);
  const sq = checkUint32('seqQ', o.seqQ);
  const sk = checkUint32('seqK', o.seqK);
  const threshold = checkUint32('threshold', o.threshold);
  if (bh * sq * sk > MAX_PHILOX_FILL_ELEMENTS) {
    throw new AttnInputError('ATTN_SIZE', `bhCount * seqQ * seqK must be at most ${MAX_PHILOX_FILL_ELEMENTS}.`);
  }
  return callNative(() => addon.dropoutWords(device, o.seed, offset, bh, sq, sk, threshold));
}
