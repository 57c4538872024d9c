// sequsedK: keys used per batch row (FlashAttention's seqused_k), shared by sdpa and sdpaVarlen.
import type { Device } from './device.js';
import { AttnInputError } from './errors.js';
import type { SequsedKParams } from './params.js';
import { checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

function sequsedError(message: string): AttnInputError {
  return new AttnInputError('ATTN_SEQUSED_K', message);
}

/**
 * int32 [batch], contiguous, on the call's device, each length in [0, keyCount(b)]. Returns a host
 * copy of the lengths (reading a device tensor synchronizes, as cuSeqlens does), or null when absent.
 * When the values stay on the device (`valuesOnDevice`: graph capture, or indexValuesOnDevice) they
 * are not read: lengths is null, and the kernels clamp each length they read to the row's keys.
 */
export function checkSequsedK(
  value: unknown,
  batch: number,
  keyCount: (b: number) => number,
  device: Device,
  valuesOnDevice: boolean,
): SequsedKParams | null {
  if (value === undefined || value === null) return null;
  const t = checkTensorArg(value, 'sequsedK');
  if (t.dtype !== 'int32' || t.rank !== 1 || t.shape[0] !== batch) {
    throw sequsedError(
      `sequsedK must be an int32 tensor of shape [${batch}] (one key count per batch row); got ${t.dtype} ${shapeStr(t)}.`,
    );
  }
  if (!t.isContiguous())
    throw sequsedError('sequsedK must be contiguous (kernels read it as a plain array); call .contiguous().');
  checkSameDevice(t, 'sequsedK', device);
  if (valuesOnDevice) return Object.freeze({ tensor: t, lengths: null });
  const lengths = Int32Array.from(t.toFloat64Array());
  for (let b = 0; b < batch; b++) {
    const n = lengths[b]!;
    const max = keyCount(b);
    if (n < 0 || n > max) {
      throw sequsedError(
        `sequsedK[${b}] = ${n} is outside [0, ${max}], the keys row ${b} holds; a row uses between 0 and all of its keys.`,
      );
    }
  }
  return Object.freeze({ tensor: t, lengths });
}
