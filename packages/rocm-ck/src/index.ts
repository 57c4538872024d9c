// @attn/rocm-ck: registers 'ck-flash' and 'ck-efficient' for device 'rocm' on import, and tells
// @attn/rocm that CK is installed (so preferredRocmFaLibrary('ck') can use it).
import { registerBackend } from '@attn/core';
import { registerRocmFaLibrary } from '@attn/rocm';
import { ckEfficient, ckFlash } from './backend.js';
import { ckAvailability } from './native.js';
import { CK_ARCHS } from './rules.js';

registerBackend(ckFlash);
registerBackend(ckEfficient);
registerRocmFaLibrary({ library: 'ck', availability: ckAvailability, archs: CK_ARCHS });

export * from './backend.js';
export { ckAvailability } from './native.js';
export { encodeCkMask, MASK_BOTTOM_RIGHT, MASK_NONE, MASK_TOP_LEFT, type CkMask } from './mask.js';
export { ckBias, ckStrides, forwardArgs, forwardTraits, type CkFwdArgs, type CkFwdTraits } from './marshal/args.js';
export { backwardArgs, backwardTraits, dqAccSplits, type CkBwdTraits } from './marshal/backward.js';
export { CK_ARCHS, efficientRules, flashRules } from './rules.js';
