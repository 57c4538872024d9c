// Errors as classes with a stable `code`. Recognize them across package copies by `name`/`code`.

export class AttnError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Bad input: the message says what to change. Codes: 'ATTN_RANK', 'ATTN_DTYPE_MISMATCH', ... */
export class AttnInputError extends AttnError {}

/** A tensor (or its device memory) was used after dispose(). */
export class DisposedError extends AttnError {
  constructor(what: string) {
    super('ATTN_DISPOSED', `${what} was used after dispose(); keep a reference alive or make a new tensor.`);
  }
}

/** A device runtime failed (CUDA error, missing device). Carries the runtime's message. */
export class DeviceError extends AttnError {}

/**
 * Graph capture or replay was misused, or the runtime refused the capture. Codes: GRAPH_CODES
 * ('ATTN_GRAPH_DISPOSED', 'ATTN_GRAPH_CAPTURE_UNSUPPORTED', ...); the message says what to do instead.
 */
export class GraphError extends AttnError {}

/** Allocation failed; says how much was asked for and what the allocator holds. */
export class OutOfMemoryError extends DeviceError {
  readonly requestedBytes: number;
  constructor(message: string, requestedBytes: number) {
    super('ATTN_OUT_OF_MEMORY', message);
    this.requestedBytes = requestedBytes;
  }
}
