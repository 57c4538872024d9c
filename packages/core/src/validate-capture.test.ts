// sdpaKvCache's validation while the device captures a graph (DeviceRuntime.capturing): its index
// tensors on the device are checked for shape, dtype and device without reading their values (no
// device-to-host copy), their host copies are null, and params.capturing (and indexValuesOnDevice)
// say so. Eager calls are unchanged. sdpa and sdpaVarlen: validate-index-values.test.ts.
import { describe, expect, it } from 'vitest';
import { useCapturingDevice } from './capturing-device.fixture.js';
import { AttnError } from './errors.js';
import { tensor, zeros } from './factory.js';
import { kvHostCopies, normalizeKvCacheParams } from './kv-cache.js';
import { sequencePairs } from './rule.js';
import { indexValuesOnHost } from './rules.js';

describe('sdpaKvCache validation during graph capture', () => {
  const device = useCapturingDevice();

  const i32 = (values: number[], shape: number[]) => tensor(values, shape, { dtype: 'int32', device: 'cuda' });

  describe('sdpaKvCache', () => {
    // B 2, Sq 1, Hq 4, Hk 2, D 8; contiguous cache of 3 rows of 10 keys, or a pool of 4 blocks of 4.
    const h16 = (shape: number[]) => zeros(shape, { dtype: 'float16', device: 'cuda' });
    const kvCall =
      (o: object = {}, cache = [3, 10, 2, 8]) =>
      () =>
        normalizeKvCacheParams(h16([2, 1, 4, 8]), h16(cache), h16(cache), {
          cacheSeqlens: i32([3, 9], [2]),
          kNew: h16([2, 1, 2, 8]),
          vNew: h16([2, 1, 2, 8]),
          cacheBatchIdx: i32([2, 0], [2]),
          leftpadK: i32([1, 0], [2]),
          rotaryCos: h16([11, 4]),
          rotarySin: h16([11, 4]),
          enableGqa: true,
          isCausal: true,
          ...o,
        });

    it('reads cacheSeqlens, cacheBatchIdx and leftpadK eagerly, none of them while capturing', () => {
      const eager = kvCall()();
      expect(device.counts.d2h).toBe(3);
      expect(eager.capturing).toBe(false);
      expect(kvHostCopies(eager.kvCache!).keyCount).toEqual(Int32Array.from([3, 10]));

      device.capturing = true;
      const p = kvCall()();
      expect(device.counts.d2h).toBe(3);
      expect(p.capturing).toBe(true);
      expect(p.indexValuesOnDevice).toBe(true);
      expect(p.kvCache).toMatchObject({
        seqlens: null,
        cacheRows: null,
        keyStart: null,
        keyCount: null,
        newLen: 1,
        capacity: 10,
      });
      expect(p.seqK).toBe(10); // the capacity bounds the key counts
      expect(sequencePairs(p)).toBeNull();
      expect(() => kvHostCopies(p.kvCache!)).toThrow(
        expect.objectContaining({ code: 'ATTN_GRAPH_CAPTURE_UNSUPPORTED' }),
      );
      expect(indexValuesOnHost.check(p, { device: null })).toMatch(/cacheSeqlens/);
      expect(indexValuesOnHost.check(eager, { device: null })).toBeNull();
    });

    it('values that only an eager call can see are checked eagerly and skipped while capturing', () => {
      const overflow = kvCall({ cacheSeqlens: i32([3, 10], [2]) });
      const repeated = kvCall({ cacheBatchIdx: i32([1, 1], [2]) });
      const table = kvCall({ cacheBatchIdx: null, blockTable: i32([0, 9, 1, 2], [2, 2]) }, [4, 4, 2, 8]);
      for (const c of [overflow, repeated, table]) expect(c).toThrow(AttnError);
      const reads = device.counts.d2h;
      device.capturing = true;
      for (const c of [overflow, repeated, table]) expect(c).not.toThrow();
      expect(device.counts.d2h).toBe(reads);
    });

    it('still checks shapes, dtypes and devices while capturing', () => {
      device.capturing = true;
      expect(kvCall({ cacheSeqlens: i32([3], [1]) })).toThrow(expect.objectContaining({ code: 'ATTN_KV_CACHE' }));
      expect(kvCall({ leftpadK: tensor([0, 0], [2], { dtype: 'int32' }) })).toThrow(
        expect.objectContaining({ code: 'ATTN_DEVICE_MISMATCH' }),
      );
      expect(kvCall({ cacheBatchIdx: tensor([0, 1], [2], { dtype: 'float32', device: 'cuda' }) })).toThrow(
        expect.objectContaining({ code: 'ATTN_KV_CACHE' }),
      );
      expect(kvCall({ cacheSeqlens: null })).toThrow(/needs cacheSeqlens/);
      expect(kvCall({ cacheBatchIdx: null, blockTable: i32([0, 1, 2], [3, 1]) }, [4, 4, 2, 8])).toThrow(
        expect.objectContaining({ code: 'ATTN_BLOCK_TABLE' }),
      );
      expect(device.counts.d2h).toBe(0);
    });
  });
});
