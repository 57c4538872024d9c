// cpu-flash's limits, written once: the rules decline past them (rules.ts), marshal.ts hands the
// addon windows through core's kernelWindow, and limits.test.ts drives the addon at each limit and one
// past it, so a change on either side that breaks the agreement fails a test.

export const CPU_FLASH_LIMITS = Object.freeze({
  /** B, Hq, Hk, Sq and Sk: the kernel's row counters and Philox (b, h) words are 32-bit. */
  maxDim: 2 ** 31 - 1,
  /** D and Dv: per-thread tiles hold 64 rows of the head dim. There is no empty-head path (Dv >= 1). */
  minHeadDim: 1,
  maxHeadDim: 2 ** 16,
  /** A window side, in keys (-1: unbounded). */
  maxWindow: 2 ** 31 - 1,
});
