// The one argument ABI's TS side: layouts from names, the drift check against a header's enums, the packer's
// helpers. Each backend's own drift test runs the check on its real headers.
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { randn, registerDeviceRuntime } from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { abiHeaderMismatches, abiLayout, headerEnumNames, putNums, rowStrides } from './abi.js';

beforeAll(() => registerDeviceRuntime(makeFakeDeviceRuntime({ type: 'cuda' })));

const HEADER = `
namespace x {
// clang-format off
enum Ptr : int { kQ, kOut,  // a comment, kNot
  kLse, kPtrCount };
enum Num : int {
  kBatch, kQBatchStride, kQHeadStride, kQRowStride,
  kNumCount
};
}`;

describe('abiLayout', () => {
  const layout = abiLayout(['q', 'out', 'lse'], ['batch', 'qBatchStride', 'qHeadStride', 'qRowStride']);

  it("gives each name its position and arrays of the layout's sizes, zeroed", () => {
    expect(layout.ptr).toEqual({ q: 0, out: 1, lse: 2 });
    expect(layout.num.qRowStride).toBe(3);
    const a = layout.arrays();
    expect(a.ptrs).toBeInstanceOf(BigUint64Array);
    expect(a.ptrs.length).toBe(3);
    expect(a.nums).toBeInstanceOf(Float64Array);
    expect([...a.nums]).toEqual([0, 0, 0, 0]);
    expect(layout.arrays().nums).not.toBe(a.nums);
  });

  it('refuses a name given twice', () => {
    expect(() => abiLayout(['q', 'q'], [])).toThrow(/repeats/);
  });
});

describe('the drift check', () => {
  it("reads a header's enum members without comments or the count", () => {
    expect(headerEnumNames(HEADER, 'Ptr')).toEqual(['q', 'out', 'lse']);
    expect(() => headerEnumNames(HEADER, 'BwdNum')).toThrow(/not found/);
  });

  it('passes a layout that matches and names each slot that does not', () => {
    const good = abiLayout(['q', 'out', 'lse'], ['batch', 'qBatchStride', 'qHeadStride', 'qRowStride']);
    expect(abiHeaderMismatches(good, HEADER, { ptr: 'Ptr', num: 'Num' })).toEqual([]);
    const swapped = abiLayout(['q', 'lse', 'out'], ['batch', 'qBatchStride', 'qHeadStride']);
    expect(abiHeaderMismatches(swapped, HEADER, { ptr: 'Ptr', num: 'Num' })).toEqual([
      "enum Ptr slot 1: TS 'lse', C++ 'out'",
      "enum Ptr slot 2: TS 'out', C++ 'lse'",
      "enum Num slot 3: TS '(none)', C++ 'qRowStride'",
    ]);
  });

  it('refuses an enum member with a value (the layout is positional)', () => {
    expect(() => headerEnumNames('enum Ptr : int { kQ = 2, kPtrCount };', 'Ptr')).toThrow(/plain kName/);
  });
});

describe("the packer's helpers", () => {
  it('rowStrides: dense [B, H, S, D] as is, packed varlen [total, H, D] with batch stride 0', () => {
    expect(rowStrides(randn([2, 3, 5, 8], { device: 'cuda' }))).toEqual([120, 40, 8]);
    expect(rowStrides(randn([2, 5, 3, 8], { device: 'cuda' }).transpose(1, 2))).toEqual([120, 8, 24]);
    expect(rowStrides(randn([9, 4, 8], { device: 'cuda' }))).toEqual([0, 8, 32]);
  });

  it('putNums writes consecutive slots', () => {
    const nums = new Float64Array(5);
    putNums(nums, 1, [7, 8, 9]);
    expect([...nums]).toEqual([0, 7, 8, 9, 0]);
  });
});
