// cuda-math's limits, written once: the rules decline past them (rules.ts), and limits.test.ts
// compares them with the addon's (mathLimits(), native/src/math/math_limits.h) and drives the addon at
// each limit and one past it, so a change on either side that breaks the agreement fails a test.

export const CUDA_MATH_LIMITS = Object.freeze({
  /**
   * D and Dv (Dv may be 0; D >= 1 is core's own rule). The forward and row kernels hold
   * maxHeadDim / 128 accumulators per thread; the key kernel's one-key tile needs 32 KiB of shared memory at 1024.
   */
  maxHeadDim: 1024,
  /** Sq and Sk (dense), and maxSeqlenQ / maxSeqlenK (varlen): varlen offsets are int32, and dropout's Philox counter takes positions as 32-bit words. */
  maxSeq: 2 ** 31 - 1,
});
