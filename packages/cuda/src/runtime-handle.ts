// What streams and events share: a native handle that belongs to one runtime's addon. Both stream.ts
// and event.ts check handles through this module, so neither needs the other's class.
import { AttnInputError } from '@attn/core';
import { gpuPlatform, type GpuType } from './platform.js';

/** A stream or event: which runtime made it, and its native handle. */
export interface RuntimeHandle {
  readonly deviceType: GpuType;
  readonly handle: bigint;
}

/** `s` when it is a stream or event of the runtime of `type`: their handles mean nothing to another addon. */
export function checkSameRuntime<S extends { readonly deviceType: GpuType }>(type: GpuType, what: string, s: S): S {
  if (typeof s !== 'object' || s === null || s.deviceType !== type) {
    const got =
      typeof s === 'object' && s !== null && typeof s.deviceType === 'string' ? `a ${s.deviceType} one` : String(s);
    throw new AttnInputError(
      'ATTN_DEVICE',
      `${what} must belong to the ${type} runtime (${gpuPlatform(type).packageName}), got ${got}.`,
    );
  }
  return s;
}
