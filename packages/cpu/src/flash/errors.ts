// Errors from the addon carry a `code` (native/src/addon.cpp); here they become core's typed errors.
import { AttnError, AttnInputError, OutOfMemoryError } from '@attn/core';

function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The typed error for something the addon threw (or a promise it rejected with). */
export function fromNative(e: unknown, requestedBytes = 0): Error {
  const message = e instanceof Error ? e.message : String(e);
  switch (codeOf(e)) {
    case 'ATTN_CPU_FLASH_ARGS':
      return new AttnInputError('ATTN_CPU_FLASH_ARGS', message, { cause: e });
    case 'ATTN_CPU_FLASH_OOM':
      return new OutOfMemoryError(
        `${message}; the call's inputs and outputs take ${requestedBytes} bytes`,
        requestedBytes,
      );
    default:
      return new AttnError('ATTN_CPU_FLASH_INTERNAL', message, { cause: e });
  }
}

/** Runs a sync addon call, rethrowing its failure as a typed error. */
export function callNative<T>(fn: () => T, requestedBytes = 0): T {
  try {
    return fn();
  } catch (e) {
    throw fromNative(e, requestedBytes);
  }
}
