// The rule library: one named, parametrized function per PyTorch sdp_utils check (PyTorch's
// aten/src/ATen/native/transformers/sdp_utils_cpp.h and cuda/sdp_utils.cpp). A backend lists the rules it needs, in order;
// selection reports every one that fails, with its name and a message that says what to change.
import type { Rule } from './backend.js';
import { noAttnMask } from './rules-feature.js';

export { type PerDType, rule } from './rule.js';
export * from './rules-device.js';
export * from './rules-feature.js';
export * from './rules-shape.js';

/** The name for "takes no mask beyond causal/window" (arbitrary masks are what it refuses): the same check as noAttnMask. */
export const noArbitraryMask: Rule = noAttnMask;
