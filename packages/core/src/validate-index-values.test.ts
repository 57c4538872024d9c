// Index values left on the device: while the device captures a graph (DeviceRuntime.capturing) and
// with the indexValuesOnDevice option, by one code path. Index tensors on the device are checked for
// shape, dtype and device without reading their values (no device-to-host copy), their host copies
// are null, and params.indexValuesOnDevice says so. Eager calls without the option are unchanged.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerDeviceRuntime } from './device-registry.js';
import { tensor, zeros } from './factory.js';
import { useCapturingDevice } from './capturing-device.fixture.js';
import { type FakeDeviceRuntime, makeFakeDeviceRuntime } from './fake-device.js';
import { hostIndexCopies, sequencePairs } from './rule.js';
import { clearCallCache } from './call-cache.js';
import { registerBackend } from './registry.js';
import { indexValuesOnHost } from './rules.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';
import { normalizeParams } from './validate.js';
import { explainVarlen, normalizeVarlenParams, sdpaVarlen } from './varlen.js';

// The two ways to leave the values on the device: `on` turns one on for the calls that follow.
const MODES = [
  { mode: 'graph capture', option: {}, capturing: true },
  { mode: 'indexValuesOnDevice: true', option: { indexValuesOnDevice: true }, capturing: false },
] as const;

describe.each(MODES)('validation with index values on the device: $mode', ({ option, capturing: byCapture }) => {
  const device = useCapturingDevice();

  /** Leaves the index values on the device for the calls made with `withOption`. */
  const on = () => {
    if (byCapture) device.capturing = true;
  };
  const withOption = <T extends object>(o: T): T => ({ ...o, ...option });
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

  it('reads the index values eagerly, and none when they stay on the device', () => {
    const { q, k, opts } = pagedCall();
    const eager = normalizeVarlenParams(q, k, k, opts);
    expect(device.counts.d2h).toBe(4); // cuSeqlensQ, cuSeqlensK, sequsedK, blockTable
    expect(eager.capturing).toBe(false);
    expect(eager.indexValuesOnDevice).toBe(false);
    expect([...hostIndexCopies(eager).blockTable!]).toEqual([3, 1, 0, 2]);

    on();
    const p = normalizeVarlenParams(q, k, k, withOption(opts));
    expect(device.counts.d2h).toBe(4);
    expect(p.capturing).toBe(byCapture);
    expect(p.indexValuesOnDevice).toBe(true);
    expect(p.varlen).toMatchObject({ seqlensQ: null, seqlensK: null, maxSeqlenQ: 1, maxSeqlenK: 5 });
    expect(p.sequsedK).toMatchObject({ tensor: opts.sequsedK, lengths: null });
    expect(p.paged).toMatchObject({
      blockTable: opts.blockTable,
      table: null,
      blockSize: 4,
      numBlocks: 4,
      maxBlocksPerSeq: 2,
    });
    expect(sequencePairs(p)).toBeNull();
    expect(() => hostIndexCopies(p)).toThrow(
      expect.objectContaining({ code: byCapture ? 'ATTN_GRAPH_CAPTURE_UNSUPPORTED' : 'ATTN_BACKEND_RULES' }),
    );
  });

  it('still checks shapes, dtypes and devices of the index tensors', () => {
    const { q, k, opts } = pagedCall();
    on();
    const bad = (o: object) => () => normalizeVarlenParams(q, k, k, withOption({ ...opts, ...o }));
    expect(bad({ cuSeqlensK: i32([0, 5], [2]) })).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' }));
    expect(bad({ cuSeqlensQ: tensor([0, 1, 2], [3], { dtype: 'float32', device: 'cuda' }) })).toThrow(
      expect.objectContaining({ code: 'ATTN_VARLEN' }),
    );
    expect(bad({ sequsedK: i32([1, 2, 3], [3]) })).toThrow(expect.objectContaining({ code: 'ATTN_SEQUSED_K' }));
    expect(bad({ sequsedK: tensor([1, 2], [2], { dtype: 'int32' }) })).toThrow(
      expect.objectContaining({ code: 'ATTN_DEVICE_MISMATCH' }),
    );
    expect(bad({ blockTable: i32([0, 1, 2], [3, 1]) })).toThrow(expect.objectContaining({ code: 'ATTN_BLOCK_TABLE' }));
    expect(bad({ maxSeqlenK: 2 ** 31 })).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' }));
    expect(device.counts.d2h).toBe(0);
  });

  it('dense calls with sequsedK skip only the value check', () => {
    const q = zeros([2, 2, 3, 8], { device: 'cuda' });
    const k = zeros([2, 2, 5, 8], { device: 'cuda' });
    const sequsedK = i32([9, 9], [2]); // out of range: caught eagerly, not with the values on the device
    expect(() => normalizeParams(q, k, k, { sequsedK })).toThrow(expect.objectContaining({ code: 'ATTN_SEQUSED_K' }));
    on();
    const p = normalizeParams(q, k, k, withOption({ sequsedK }));
    expect(p).toMatchObject({ capturing: byCapture, indexValuesOnDevice: true, sequsedK: { lengths: null } });
    expect(normalizeParams(q, k, k, withOption({})).indexValuesOnDevice).toBe(true);
    expect(device.counts.d2h).toBe(1);
  });

  it('declines backends that need the values on the host (indexValuesOnHost), and runs the others', () => {
    const host = makeFakeBackend('host-planner', { deviceType: 'cuda', priority: 2, rules: [indexValuesOnHost] });
    const device = makeFakeBackend('device-reader', { deviceType: 'cuda', priority: 1 });
    registerBackend(host);
    registerBackend(device);
    const { q, k, opts } = pagedCall();
    expect(sdpaVarlen(q, k, k, opts).backend).toBe('host-planner');
    on();
    expect(sdpaVarlen(q, k, k, withOption(opts)).backend).toBe('device-reader');
    const report = explainVarlen(q, k, k, withOption(opts));
    expect(report.candidates[0]!.reasons.map((r) => r.rule)).toEqual(['indexValuesOnHost']);
  });
});

describe('the indexValuesOnDevice option', () => {
  let restore: (() => void) | null = null;
  let runtime: FakeDeviceRuntime;
  beforeEach(() => {
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    clearCallCache();
    runtime = makeFakeDeviceRuntime();
    registerDeviceRuntime(runtime);
  });
  afterEach(() => restore?.());

  it('is a boolean (ATTN_OPTION otherwise)', () => {
    const q = zeros([1, 1, 2, 8]);
    expect(() => normalizeParams(q, q, q, { indexValuesOnDevice: 'yes' as never })).toThrow(
      expect.objectContaining({ code: 'ATTN_OPTION' }),
    );
  });

  it('leaves CPU index values checked: they are host memory', () => {
    const q = zeros([3, 2, 8]);
    const i32 = (values: number[]) => tensor(values, [values.length], { dtype: 'int32' });
    const opts = {
      cuSeqlensQ: i32([0, 1, 3]),
      cuSeqlensK: i32([0, 2, 4]),
      maxSeqlenQ: 2,
      maxSeqlenK: 2,
      indexValuesOnDevice: true,
    };
    expect(() => normalizeVarlenParams(q, q, q, opts)).toThrow(expect.objectContaining({ code: 'ATTN_VARLEN' })); // ends at 4, not 3
    const p = normalizeVarlenParams(q, q, q, { ...opts, cuSeqlensK: i32([0, 2, 3]) });
    expect(p.indexValuesOnDevice).toBe(false);
    expect([...p.varlen!.seqlensK!]).toEqual([0, 2, 3]);
  });

  it('caches device calls: later calls of the signature read nothing and run no rule', () => {
    let runs = 0;
    registerBackend(
      makeFakeBackend('reader', { deviceType: 'cuda', rules: [{ name: 'counted', check: () => (runs++, null) }] }),
    );
    const q = zeros([2, 4, 64], { dtype: 'float16', device: 'cuda' });
    const k = zeros([8, 4, 64], { dtype: 'float16', device: 'cuda' });
    const i32 = (values: number[]) => tensor(values, [values.length], { dtype: 'int32', device: 'cuda' });
    const opts = {
      cuSeqlensQ: i32([0, 1, 2]),
      cuSeqlensK: i32([0, 5, 8]),
      maxSeqlenQ: 1,
      maxSeqlenK: 5,
      indexValuesOnDevice: true,
    };
    for (let i = 0; i < 3; i++) sdpaVarlen(q, k, k, opts);
    expect(runs).toBe(1);
    expect(runtime.counts.d2h).toBe(0);
    // Another cuSeqlensK of the same layout: no read, no check of its values (the kernels clamp).
    sdpaVarlen(q, k, k, { ...opts, cuSeqlensK: i32([0, 9, 99]) });
    expect(runs).toBe(1);
    expect(runtime.counts.d2h).toBe(0);
    // A new layout is validated again.
    expect(() => sdpaVarlen(q, k, k, { ...opts, cuSeqlensK: i32([0, 9]) })).toThrow(
      expect.objectContaining({ code: 'ATTN_VARLEN' }),
    );
  });
});
