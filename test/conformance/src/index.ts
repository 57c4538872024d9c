// @attn/conformance: the suite every backend package runs against cpu-math.
//   import '@attn/cpu';            // the reference
//   import '@attn/your-backend';   // registers the backend under test
//   describeConformance('your-backend', { quick: true });
export { describeConformance, describeConformanceWhereRunnable } from './describe.js';
export { describeCaseTable } from './describe-table.js';
export type { TableCase, TableOptions } from './describe-table.js';
export { headDimGrid, tableCase } from './table-case.js';
export type { Short } from './table-case.js';
export { describeWhereRunnable, REQUIRE_GPU_ENV, type RequireEnv } from './gate.js';
export type { ConformanceOptions, GatedConformance } from './describe.js';
export { buildCases } from './cases.js';
export type { CaseOptions, CaseSpec, MaskSpec, PoisonSpec } from './cases.js';
export { DEFAULT_SLACK, judge, NAIVE_SANITY, slackOf } from './accuracy.js';
export type { JudgeOptions, Verdict } from './accuracy.js';
export { naiveAttention } from './naive.js';
export { compareWithReference, disposeInputs, REFERENCE, runCase } from './run-case.js';
export type { Launch } from './run-case.js';
export { makeInputs } from './inputs.js';
export {
  type BackwardFromCase,
  backwardFromBlocks,
  type BackwardFromResult,
  checkBackwardFrom,
} from './backward-from.js';
export { fromPool, pagedLayout, toPool } from './paged.js';
export { buildKvCacheCases, runKvCacheCase } from './kv-cache.js';
export type { KvCacheCaseSpec, KvCacheOutcome } from './kv-cache.js';
export type { PagedLayout } from './paged.js';
export type { CaseInputs } from './inputs.js';
export { describeGridWalk } from './grid/describe-grid.js';
export type { GridWalkOptions } from './grid/describe-grid.js';
export { featureCombinations, gridCase, gridCases, GRID_SHAPES } from './grid/feature-grid.js';
export type { GridFeatures, GridShape } from './grid/feature-grid.js';
export type { Outcome } from './run-case.js';
export type { NaiveDropout, NaiveResult } from './naive.js';
export { checkBackend } from './check.js';
export type { CaseResult, CheckOptions, CheckReport } from './check.js';
export { describeFuzz, FUZZ_RUNS_ENV, FUZZ_SANITIZER_ENV, FUZZ_SEED_ENV } from './fuzz/describe-fuzz.js';
export type { FuzzOptions } from './fuzz/describe-fuzz.js';
export { caseSpec, describeSpec, POISON_VALUES } from './fuzz/arbitrary.js';
export { describeSoak, MAX_RSS_GROWTH_MIB } from './soak/describe-soak.js';
export { runSoak, SOAK_CALLS_ENV } from './soak/soak.js';
export type { SoakOptions, SoakReport } from './soak/soak.js';
