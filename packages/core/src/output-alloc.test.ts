import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerDeviceRuntime } from './device-registry.js';
import { OutOfMemoryError } from './errors.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import { emptyOutput, OUTPUT_NAMES } from './output-alloc.js';
import { isolateRegistry } from './testing.js';

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
});
afterEach(() => restore());

describe('emptyOutput', () => {
  it('a host allocation failure names the output, its shape and size, and what to chunk', () => {
    expect(() => emptyOutput(OUTPUT_NAMES.dq, [1, 1, 2 ** 31 - 1, 64], { dtype: 'float32' })).toThrow(
      expect.objectContaining({
        code: 'ATTN_SIZE',
        message: expect.stringMatching(
          /the query gradient \(dq\), float32 \[1, 1, 2147483647, 64\] \(512\.0 GiB\).*chunks of batch or heads/,
        ),
      }),
    );
  });

  it('a device out-of-memory stays an OutOfMemoryError, with the name added', () => {
    const runtime = makeFakeDeviceRuntime();
    registerDeviceRuntime({
      ...runtime,
      allocate: (bytes: number) => {
        throw new OutOfMemoryError(`cuda:0 cannot allocate ${bytes} bytes`, bytes);
      },
    });
    let error: unknown;
    try {
      emptyOutput(OUTPUT_NAMES.out, [2, 8, 4096, 128], { dtype: 'float16', device: 'cuda' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).requestedBytes).toBe(2 * 8 * 4096 * 128 * 2);
    expect((error as Error).message).toMatch(
      /the attention output \(out\), float16 \[2, 8, 4096, 128\] \(16\.0 MiB\): cuda:0 cannot allocate/,
    );
  });
});
