// @attn/cli as a library: the program (for embedding and tests) and its reusable pieces.
export { main, reportError, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './program.js';
export { memoryIO, processIO, type CliIO, type OutStream } from './io.js';
export { CliUsageError, CompareError, OutputFileError } from './errors.js';
export { forwardFlops, modeFlops, visibleFraction, MODES, MODE_FACTOR, type FlopShape, type Mode } from './flops.js';
export { median, quantile, summarize, type Summary } from './stats.js';
export { STANDARD_GRID, CPU_GRID, gridProblems, decodeProblem, overheadProblem, type GridSpec } from './bench/grid.js';
export type { BenchRow } from './bench/row.js';
export type { BenchReport } from './bench/report.js';
export { chartSpec, plotData } from './plot/spec.js';
export { renderSvg } from './plot/render.js';
export type { ProblemSpec, Features } from './problem.js';
