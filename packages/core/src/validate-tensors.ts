// Checks on query/key/value themselves, shared by the dense and varlen entry points: each is a
// live Tensor, floating (or float8_e4m3), one dtype, one device (PyTorch's validate_sdpa_input).
import type { Device } from './device.js';
import { deviceToString, sameDevice } from './device-parse.js';
import { type FloatDType, isQkvDType, type QkvDType } from './dtype.js';
import { AttnInputError } from './errors.js';
import { outputDType } from './validate-float8.js';
import { Tensor } from './tensor.js';

export function shapeStr(t: Tensor): string {
  return `[${t.shape.join(', ')}]`;
}

/** A live Tensor, or ATTN_TYPE / ATTN_DISPOSED. */
export function checkTensorArg(t: unknown, name: string): Tensor {
  if (!Tensor.isTensor(t)) {
    const seen = t === null ? 'null' : typeof t === 'object' ? (t.constructor?.name ?? 'object') : typeof t;
    const hint =
      typeof t === 'object' && t !== null && 'shape' in t && 'dtype' in t
        ? ' (it looks like a Tensor from another copy of @attn/core: install a single version)'
        : '';
    throw new AttnInputError('ATTN_TYPE', `${name} must be a Tensor, got ${seen}${hint}.`);
  }
  t.assertLive(name);
  return t;
}

/**
 * query, key and value: floating or float8_e4m3, one dtype, one device. Returns that dtype (`inputs`),
 * the output's (`dtype`: bfloat16 for float8_e4m3 inputs) and the device.
 */
export function checkQkv(q: Tensor, k: Tensor, v: Tensor): { inputs: QkvDType; dtype: FloatDType; device: Device } {
  if (q.dtype !== k.dtype || q.dtype !== v.dtype) {
    throw new AttnInputError(
      'ATTN_DTYPE_MISMATCH',
      `Expected query, key, and value to have the same dtype, but got query.dtype: ${q.dtype}, key.dtype: ${k.dtype}, ` +
        `and value.dtype: ${v.dtype} instead. Convert them with .toDType('${q.dtype}').`,
    );
  }
  if (!isQkvDType(q.dtype)) {
    throw new AttnInputError(
      'ATTN_DTYPE',
      `query, key and value must be float64, float32, float16, bfloat16 or float8_e4m3 (with descale); got ${q.dtype}.`,
    );
  }
  if (!sameDevice(q.device, k.device) || !sameDevice(q.device, v.device)) {
    throw new AttnInputError(
      'ATTN_DEVICE_MISMATCH',
      `Expected query, key, and value to be on the same device, but got query on ${deviceToString(q.device)}, key on ` +
        `${deviceToString(k.device)}, value on ${deviceToString(v.device)}. Move them with .to('${deviceToString(q.device)}').`,
    );
  }
  return { inputs: q.dtype, dtype: outputDType(q.dtype), device: q.device };
}

/** An extra tensor (mask, slopes, offsets) must be on the query's device. */
export function checkSameDevice(t: Tensor, name: string, device: Device): void {
  if (!sameDevice(t.device, device)) {
    throw new AttnInputError(
      'ATTN_DEVICE_MISMATCH',
      `${name} is on ${deviceToString(t.device)} but query is on ${deviceToString(device)}; move it with .to('${deviceToString(device)}').`,
    );
  }
}
