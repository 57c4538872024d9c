// The one way the CUDA backends' addons take the arguments of a call (flash-cuda's forward and backward,
// memeff-cuda's, the shared kv append kernel's): two typed arrays per call, a BigUint64Array of device
// addresses (0 = absent) and a Float64Array of sizes, strides in elements, flags (0/1) and scalars, each
// slot named by an enum of the addon's abi header (the layout's one source). This module is the TS side:
// the layout (the header's names in order, checked against it by `abiHeaderMismatches` in each package's
// drift test) and the packer's helpers; `attn/abi_args.h` is the C++ side.
//
// Why typed arrays and not an object of named fields: a call is on the hot path (a decode step, a training
// step's many small heads). The addon reads each array with one N-API call and its slots as plain memory,
// where an object costs an N-API property lookup per field (memeff-cuda's ~40, nested objects included).
// Measured on the development host (node 22, memeff-cuda's addon, calls refused by the addon just after the
// parse, minus calls refused at once): reading the object 4.9-13 us per call, the arrays under 1.2 us; packing
// in TS 0.45-0.7 us for the object, 0.5-1.05 us for the arrays when they are reused (fresh typed arrays cost
// ~3 us more, so callers keep theirs: `into`). The spread is the shared host's.
import type { Tensor } from '@attn/core';

/** A call's two argument arrays. */
export interface AbiArrays {
  readonly ptrs: BigUint64Array;
  readonly nums: Float64Array;
}

/** An addon's argument layout: the slot names of its header's two enums, and each name's slot. */
export interface AbiLayout<P extends string, N extends string> {
  readonly ptrNames: readonly P[];
  readonly numNames: readonly N[];
  /** Each address name's slot. */
  readonly ptr: Readonly<Record<P, number>>;
  /** Each number name's slot. */
  readonly num: Readonly<Record<N, number>>;
  /** Fresh arrays of the layout's sizes, zeroed. */
  arrays(): AbiArrays;
}

/** Each name's position in its list: the value its enum gives it. */
export const nameIndex = <T extends string>(names: readonly T[]): Readonly<Record<T, number>> =>
  Object.freeze(Object.fromEntries(names.map((n, i) => [n, i])) as Record<T, number>);

/**
 * A layout from its slot names, in the order of the header's enums (`kQ, kK, ...` is `['q', 'k', ...]`: the
 * enum member without its `k`, first letter lower-cased).
 */
export function abiLayout<const P extends string, const N extends string>(
  ptrNames: readonly P[],
  numNames: readonly N[],
): AbiLayout<P, N> {
  for (const names of [ptrNames, numNames] as readonly (readonly string[])[]) {
    if (new Set(names).size !== names.length) throw new Error(`abiLayout: a name repeats in ${names.join(', ')}`);
  }
  return Object.freeze({
    ptrNames: Object.freeze([...ptrNames]),
    numNames: Object.freeze([...numNames]),
    ptr: nameIndex(ptrNames),
    num: nameIndex(numNames),
    arrays: () => ({ ptrs: new BigUint64Array(ptrNames.length), nums: new Float64Array(numNames.length) }),
  });
}

/**
 * The members of `enum <name> : int { kA, kB, ..., k<name>Count }` in a C++ header, as 'a', 'b', ... (comments
 * dropped; the closing `k<name>Count` is the array size, not a slot). Throws when the enum is not there.
 */
export function headerEnumNames(header: string, name: string): string[] {
  const m = new RegExp(`enum ${name} : int \\{([^}]*)\\}`).exec(header);
  if (!m) throw new Error(`enum ${name} : int { ... } not found`);
  return m[1]!
    .replace(/\/\/.*$/gm, '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && s !== `k${name}Count`)
    .map((s) => {
      if (!/^k[A-Z0-9]\w*$/.test(s)) throw new Error(`enum ${name}: '${s}' is not a plain kName member`);
      return s.slice(1, 2).toLowerCase() + s.slice(2);
    });
}

/**
 * The drift check between a TS layout and its C++ header: every way the two differ (a slot missing, extra or
 * out of place), as readable lines; [] when they agree. `enums` names the header's two enums.
 */
export function abiHeaderMismatches(
  layout: AbiLayout<string, string>,
  header: string,
  enums: { readonly ptr: string; readonly num: string },
): string[] {
  const out: string[] = [];
  const compare = (kind: string, ts: readonly string[], cpp: readonly string[]) => {
    for (let i = 0; i < Math.max(ts.length, cpp.length); i++) {
      if (ts[i] !== cpp[i]) out.push(`${kind} slot ${i}: TS '${ts[i] ?? '(none)'}', C++ '${cpp[i] ?? '(none)'}'`);
    }
  };
  compare(`enum ${enums.ptr}`, layout.ptrNames, headerEnumNames(header, enums.ptr));
  compare(`enum ${enums.num}`, layout.numNames, headerEnumNames(header, enums.num));
  return out;
}

/**
 * A [batch, head, row] view's strides in elements: dense [B, H, S, D] its own; packed varlen [total, H, D]
 * batch stride 0 (rows start at cuSeqlens[b]), then its head and row strides.
 */
export function rowStrides(t: Tensor): [number, number, number] {
  const s = t.strides;
  return t.rank === 3 ? [0, s[1]!, s[0]!] : [s[0]!, s[1]!, s[2]!];
}

/** Writes `values` into consecutive number slots from `at` (a tensor's strides, a shape). */
export function putNums(nums: Float64Array, at: number, values: readonly number[]): void {
  for (let i = 0; i < values.length; i++) nums[at + i] = values[i]!;
}
