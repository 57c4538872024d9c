// cpu-math is the reference: it takes every input core accepts, as long as the tensors are on the CPU.
import { tensorsOn } from '@attn/core';
import type { Rule } from '@attn/core';

export const cpuMathRules: readonly Rule[] = [tensorsOn('cpu')];
