// Validation while the device captures a graph (DeviceRuntime.capturing): index tensors on the
// device are checked for shape, dtype and device without reading their values (no device-to-host
// copy), their host copies are null, and params.capturing says so. Eager calls are unchanged.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerDeviceRuntime } from './device-registry.js';
import { tensor, zeros } from './factory.js';
import { type FakeDeviceRuntime, makeFakeDeviceRuntime } from './fake-device.js';
import { hostIndexCopies, sequencePairs } from './rule.js';
import { isolateRegistry } from './testing.js';
import { normalizeParams } from './validate.js';
import { normalizeVarlenParams } from './varlen.js';

describe('validation during graph capture', () => {
  let runtime: FakeDeviceRuntime;
  let capturing = false;
  let restore: (() => void) | null = null;

  beforeEach(() => {
    runtime = makeFakeDeviceRuntime();
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    registerDeviceRuntime({ ...runtime, capturing: () => capturing });
    capturing = false;
  });
  afterEach(() => restore?.());

  const i32 = (values: number[], shape: number[]) => tensor(values, shape, { dtype: 'int32', device: 'cuda' });

  function pagedCall() {
    const q = zeros([2, 4, 64], { dtype: 'float16', device: 'cuda' });
    const k = zeros([4, 4, 4, 64], { dtype: 'float16', device: 'cuda' });
    const opts = {
      cuSeqlensQ: i32([0, 1, 2], [3]),
      cuSeqlensK: i32([0, 5, 8], [3]),
      maxSeqlenQ: 1,
      maxSeqlenK: 5,
      sequsedK: i32([5, 2], [2]),
      blockTable: i32([3, 1, 0, 2], [2, 2]),
    };
    return { q, k, opts };
  }

  it('reads the index values eagerly, and none while capturing', () => {
    const { q, k, opts } = pagedCall();
    const eager = normalizeVarlenParams(q, k, k, opts);
    expect(runtime.counts.d2h).toBe(4); // cuSeqlensQ, cuSeqlensK, sequsedK, blockTable
    expect(eager.capturing).toBe(false);
    expect([...hostIndexCopies(eager).blockTable!]).toEqual([3, 1, 0, 2]);

    capturing = true;
    const p = normalizeVarlenParams(q, k, k, opts);
    expect(runtime.counts.d2h).toBe(4);
    expect(p.capturing).toBe(true);
    expect(p.varlen).toMatchObject({ seqlensQ: null, seqlensK: null, maxSeqlenQ: 1, maxSeqlenK: 5 });
    expect(p.sequsedK).toMatchObject({ tensor: opts.sequsedK, lengths: null });
    expect(p.paged).toMatchObject({ blockTable: opts.blockTable, table: null, blockSize: 4, numBlocks: 4, maxBlocksPerSeq: 2 });
    expect(sequencePairs(p)).toBeNull();
    expect(() => hostIndexCopies(p)).toThrow(expect.objectContaining({ code: 'ATTN_GRAPH_CAPTURE_UNSUPPORTED' }));
  });

  it('still checks shapes, dtypes and devices of the index tensors while capturing', () => {
    const { q, k, opts } = pagedCall();
    capturing = true;
    const bad = (o: object) => () => normalizeVarlenParams(q, k, k, { ...opts, ...o });
    expect(bad({ cuSeqlensK: i32([0, 5], [2]) })).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' }));
    expect(bad({ cuSeqlensQ: tensor([0, 1, 2], [3], { dtype: 'float32', device: 'cuda' }) })).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' }));
    expect(bad({ sequsedK: i32([1, 2, 3], [3]) })).toThrow(expect.objectContaining({ code: 'ATTN_SEQUSED_K' }));
    expect(bad({ sequsedK: tensor([1, 2], [2], { dtype: 'int32' }) })).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE_MISMATCH' }));
    expect(bad({ blockTable: i32([0, 1, 2], [3, 1]) })).toThrow(expect.objectContaining({ code: 'ATTN_BLOCK_TABLE' }));
    expect(bad({ maxSeqlenK: 2 ** 31 })).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' }));
    expect(runtime.counts.d2h).toBe(0);
  });

  it('dense calls with sequsedK skip only the value check', () => {
    const q = zeros([2, 2, 3, 8], { device: 'cuda' });
    const k = zeros([2, 2, 5, 8], { device: 'cuda' });
    const sequsedK = i32([9, 9], [2]); // out of range: caught eagerly, not while capturing
    expect(() => normalizeParams(q, k, k, { sequsedK })).toThrow(expect.objectContaining({ code: 'ATTN_SEQUSED_K' }));
    capturing = true;
    const p = normalizeParams(q, k, k, { sequsedK });
    expect(p).toMatchObject({ capturing: true, sequsedK: { lengths: null } });
    expect(normalizeParams(q, k, k).capturing).toBe(true);
  });
});
