// @attn/conformance: the suite every backend package runs against cpu-math.
//   import '@attn/cpu';            // the reference
//   import '@attn/your-backend';   // registers the backend under test
//   describeConformance('your-backend', { quick: true });
export { describeConformance } from './describe.js';
export type { ConformanceOptions } from './describe.js';
export { buildCases } from './cases.js';
export type { CaseOptions, CaseSpec, MaskSpec } from './cases.js';
export { judge, NAIVE_SANITY, SLACK } from './accuracy.js';
export type { Verdict } from './accuracy.js';
export { naiveAttention } from './naive.js';
export { REFERENCE, runCase } from './run-case.js';
export type { Outcome } from './run-case.js';
export type { NaiveResult } from './naive.js';
export { checkBackend } from './check.js';
export type { CaseResult, CheckOptions, CheckReport } from './check.js';
