// @attn/rocm-aotriton: registers 'aotriton-flash' and 'aotriton-efficient' for device 'rocm' on
// import. The addon loads on first use; without it (no ROCm, no AOTriton) explain says why.
import { registerBackend } from '@attn/core';
import { aotritonEfficient, aotritonFlash } from './backend.js';

registerBackend(aotritonFlash);
registerBackend(aotritonEfficient);

export * from './backend.js';
export { archStatus, stableArchs, type ArchStatus } from './arch.js';
export { enableExperimentalAotritonArchs } from './experimental.js';
export { aotritonAvailability, aotritonVersion, type AotritonInfo } from './native.js';
export { efficientRules, flashRules, type AotritonRuleDeps } from './rules.js';
export * from './version.js';
export { encodeWindow, WINDOW_BOTTOM_RIGHT_ALIGNED, WINDOW_TOP_LEFT_ALIGNED, type AotritonWindow } from './window.js';
export { forwardArgs, type AotFwdArgs, type ForwardBuffers } from './marshal/forward.js';
export { backwardArgs, type AotBwdArgs, type BackwardBuffers } from './marshal/backward.js';
export { planForward, type ForwardPlan } from './marshal/plan.js';
export { lseConvertArgs, type LseConvertArgs } from './marshal/lse.js';
export type { TensorViewArg } from './marshal/tensor-view.js';
