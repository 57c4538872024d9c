// @attn/cpu: importing it registers the CPU backends with @attn/core.
import { registerBackend } from '@attn/core';
import { cpuMathBackend } from './math/backend.js';
import { cpuFlashBackend } from './flash/backend.js';

registerBackend(cpuMathBackend);
registerBackend(cpuFlashBackend); // priority 50, ahead of cpu-math: passes the conformance suite

export { cpuMathBackend } from './math/backend.js';
export { forwardMath } from './math/forward.js';
export { backwardMath, backwardMathFrom } from './math/backward.js';
export { cpuFlashBackend, createCpuFlashBackend, type CpuFlashOptions } from './flash/backend.js';
