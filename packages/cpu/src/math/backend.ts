// 'cpu-math': the float64 reference backend, the oracle every other backend is tested against.
import type { Backend } from '@attn/core';
import { backwardMath, backwardMathFrom } from './backward.js';
import { forwardMath } from './forward.js';
import { CPU_MATH_TOLERANCES, cpuMathRules } from './rules.js';

export const cpuMathBackend: Backend = {
  name: 'cpu-math',
  deviceType: 'cpu',
  // Lowest on the CPU: a faster CPU kernel (cpu-flash) goes first; cpu-math takes what it declines.
  defaultPriority: 0,
  description:
    'Reference attention in TypeScript: float64 accumulation, every feature and dtype (float8_e4m3 inputs with descale included), forward and backward.',
  availability: () => ({ ok: true }),
  rules: cpuMathRules,
  // float8_e4m3 inputs decode exactly to float64 and dequantize there, with every feature (forward only: core refuses their backward).
  float8Inputs: true,
  tolerances: CPU_MATH_TOLERANCES,
  forward: forwardMath,
  backward: backwardMath,
  backwardFrom: { run: backwardMathFrom },
  buildInfo: () => ({ language: 'TypeScript', accumulation: 'float64', native: false }),
};
