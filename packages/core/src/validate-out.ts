// The user's `out` tensor (PyTorch's out=): where a call writes its attention output. Its layout is
// part of the call's signature; whether it shares memory with an input depends on which tensors the
// call was given, so that check runs on every call.
import type { Device } from './device.js';
import { deviceToString, sameDevice } from './device-parse.js';
import type { DType } from './dtype.js';
import { AttnInputError } from './errors.js';
import { maxReachableIndex } from './layout.js';
import { isDeviceStorage, type Tensor } from './tensor.js';
import { checkTensorArg, shapeStr } from './validate-tensors.js';

function outError(message: string): AttnInputError {
  return new AttnInputError('ATTN_OUT', message);
}

/** A live tensor of exactly `shape`, `dtype` and `device`, contiguous, and not with requiresGrad. */
export function checkOutLayout(
  value: unknown,
  shape: readonly number[],
  dtype: DType,
  device: Device,
  requiresGrad: boolean,
): Tensor {
  const out = checkTensorArg(value, 'out');
  if (requiresGrad) {
    throw outError(
      'out cannot be given with requiresGrad: sdpaBackward reads the forward output, which a reused out may have overwritten. Leave out unset for training.',
    );
  }
  const sameShape = out.rank === shape.length && out.shape.every((s, i) => s === shape[i]);
  if (!sameShape || out.dtype !== dtype || !sameDevice(out.device, device)) {
    throw outError(
      `out must be ${dtype} [${shape.join(', ')}] on ${deviceToString(device)} (the output's shape and dtype, the query's device); ` +
        `got ${out.dtype} ${shapeStr(out)} on ${deviceToString(out.device)}. Allocate it with empty([${shape.join(', ')}], { dtype: '${dtype}', device: '${deviceToString(device)}' }).`,
    );
  }
  if (!out.isContiguous())
    throw outError(
      'out must be contiguous (kernels write it row-major); pass a contiguous tensor, or leave out unset.',
    );
  return out;
}

/** [first byte, last byte + 1) the tensor's elements occupy, within its buffer's address space. */
function byteSpan(t: Tensor): { base: unknown; start: bigint; end: bigint } | null {
  if (t.numel === 0) return null;
  const eb = BigInt(t.itemBytes);
  const first = BigInt(t.offset) * eb;
  const last = BigInt(maxReachableIndex(t.shape, t.strides, t.offset) + 1) * eb;
  if (isDeviceStorage(t.storage)) {
    const p = t.storage.pointer;
    return { base: t.device.type, start: p + first, end: p + last };
  }
  const arr = t.storage as { buffer: ArrayBufferLike; byteOffset: number };
  const at = BigInt(arr.byteOffset);
  return { base: arr.buffer, start: at + first, end: at + last };
}

/**
 * out shares no memory with any input: a kernel reading an input while writing out would read its own
 * partial results. Checked by address range (views of one storage, or two storages over one buffer).
 */
export function checkOutAliasing(
  out: Tensor,
  inputs: readonly { readonly name: string; readonly tensor: Tensor | null | undefined }[],
): void {
  const o = byteSpan(out);
  if (!o) return;
  for (const { name, tensor } of inputs) {
    if (!tensor) continue;
    const s = byteSpan(tensor);
    if (s && s.base === o.base && s.start < o.end && o.start < s.end) {
      throw outError(
        `out shares memory with ${name}; the call would overwrite its own input while reading it. Pass a separate out tensor.`,
      );
    }
  }
}
