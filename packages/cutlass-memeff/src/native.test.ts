// memeff's addon comes through @attn/native's loader (whose own tests cover every way an addon can be
// missing); here: that this package's config is what the loader needs, without loading native code
// unless it is there. Where the addon is built (no GPU needed), its argument boundary: an argument array of
// the wrong type or layout, or a slot out of range, is ATTN_MEMEFF_ARGS naming it, before any CUDA call.
import { describe, expect, it } from 'vitest';
import { BACKWARD_ABI, FORWARD_ABI } from './abi.js';
import { PACKAGE_ROOT, addonState } from './native.js';

describe('the addon', () => {
  it('is looked for from the package root', () => {
    expect(PACKAGE_ROOT).toMatch(/cutlass-memeff$/);
  });

  it('loads, or its reason names what was looked for and the npm command that fixes it', () => {
    const load = addonState();
    if (load.ok) {
      expect(load.path).toMatch(/cutlass_memeff\.node$/);
      return;
    }
    expect(load.reason).toMatch(/cutlass-memeff-linux-x64-gnu|cutlass_memeff\.node/);
    expect(load.reason).toMatch(/npm install|npx @attn\/native build @attn\/cutlass-memeff/);
    expect(load.reason).not.toMatch(/pnpm|^unavailable/);
  });
});

describe('the addon boundary', () => {
  const load = addonState();
  const addon = load.ok ? load.addon : null;
  const failure = (fn: () => unknown): { code?: string; message?: string } => {
    try {
      fn();
    } catch (e) {
      return e as { code?: string; message?: string };
    }
    return {};
  };
  // A call the parser accepts up to the edit: nothing reaches CUDA before the refused slot.
  const forward = (edit: (a: { ptrs: BigUint64Array; nums: Float64Array }) => void) => () => {
    const a = FORWARD_ABI.arrays();
    a.nums.set([2, 0, 0], FORWARD_ABI.num.dtype);
    edit(a);
    return addon!.forward(a.ptrs, a.nums);
  };
  const backward = (bnums: Float64Array) => () => {
    const a = FORWARD_ABI.arrays();
    const b = BACKWARD_ABI.arrays();
    return addon!.backward(a.ptrs, a.nums, b.ptrs, bnums);
  };

  it.skipIf(!load.ok).each([
    [
      'numbers where the addresses go',
      () => addon!.forward(new Float64Array(FORWARD_ABI.ptrNames.length) as never, FORWARD_ABI.arrays().nums),
      /argument 0 \(addresses\) must be a BigUint64Array/,
    ],
    [
      'a number array of another layout',
      () => addon!.forward(FORWARD_ABI.arrays().ptrs, new Float64Array(3)),
      /argument 1 \(arguments\) has 3 elements, expected \d+ \(abi mismatch\)/,
    ],
    ['a fractional batch', forward((a) => (a.nums[FORWARD_ABI.num.batch] = 1.5)), /batch must be an integer/],
    ['a negative key length', forward((a) => (a.nums[FORWARD_ABI.num.seqK] = -1)), /seqK must be an integer/],
    ['a fractional stride', forward((a) => (a.nums[FORWARD_ABI.num.kRowStride] = 0.5)), /k strides must be an integer/],
    [
      'a causal flag of 2',
      forward((a) => (a.nums[FORWARD_ABI.num.causal] = 2)),
      /causal must be an integer in \[0, 1\]/,
    ],
    [
      'a mask of kind 3',
      forward((a) => (a.nums[FORWARD_ABI.num.maskKind] = 3)),
      /mask kind must be an integer in \[0, 2\]/,
    ],
    ['a path of 3', forward((a) => (a.nums[FORWARD_ABI.num.path] = 3)), /path must be an integer in \[0, 2\]/],
    [
      'a backward array of another layout',
      backward(new Float64Array(2)),
      /argument 3 \(backward arguments\) has 2 elements, expected \d+ \(abi mismatch\)/,
    ],
  ])('refuses %s', (_name, call, message) => {
    const e = failure(call);
    expect(e.code).toBe('ATTN_MEMEFF_ARGS');
    expect(e.message).toMatch(/^memeff-cuda: /);
    expect(e.message).toMatch(message);
  });
});
