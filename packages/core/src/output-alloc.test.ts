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

  it("'whole' host outputs: their own storage of the dtype's array, not zero-filled, failures named the same", () => {
    const t = emptyOutput(OUTPUT_NAMES.out, [3, 5, 7], { dtype: 'bfloat16' }, 'whole');
    const data = t.storage as Uint16Array;
    expect(data.constructor).toBe(Uint16Array);
    expect([data.length, data.byteOffset, data.buffer.byteLength]).toEqual([105, 0, 210]);
    const lse = emptyOutput(OUTPUT_NAMES.logsumexp, [2, 9], { dtype: 'float32' }, 'whole');
    expect(lse.storage).toBeInstanceOf(Float32Array);
    expect(() => emptyOutput(OUTPUT_NAMES.dq, [1, 1, 2 ** 31 - 1, 64], { dtype: 'float32' }, 'whole')).toThrow(
      expect.objectContaining({ code: 'ATTN_SIZE', message: expect.stringMatching(/the query gradient \(dq\)/) }),
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
