// @attn/context-parallel: one attention call sharded along the sequence over a ring of ranks.
export { CONTEXT_PARALLEL_CODES, type ContextParallelCode } from './errors.js';
export { type Chunk, type LayoutKind, shardLayout, type ShardLayout, splitEven } from './layout.js';
export {
  type BlockKind,
  blockKind,
  type BlockTask,
  ringSchedule,
  ringSource,
  type RingStep,
  stepTasks,
  taskPairs,
} from './schedule.js';
export { logAddExp, mergeInto, partialWeight } from './merge.js';
export { SEQ_DIM, shardTensor, unshardTensor } from './shard.js';
export type { RingChannel, RingTransport } from './transport.js';
export { LoopbackRing, type LoopbackStats } from './loopback.js';
export type { RankShard, RingOptions } from './options.js';
export type { RingTrace } from './trace.js';
export { hostMath, type OutAccumulator, type RingMath } from './math.js';
export { incomingShapes } from './schedule.js';
export { ringForward, type RankForward } from './forward.js';
export { ringBackward, type RankGradients } from './backward.js';
export { type LoopbackCallOptions, type LoopbackResult, ringAttentionLoopback } from './loopback-run.js';
export {
  findNccl,
  headerVersion,
  type NcclBuild,
  type NcclLibrary,
  type NcclProbe,
  type NcclReport,
  type NcclSource,
  systemProbe,
} from './nccl/find.js';
export { fetchNcclWheel, NCCL_WHEEL } from './nccl/wheel.js';
export { exchangeUniqueId, FileRendezvous, NCCL_UNIQUE_ID_BYTES, type Rendezvous } from './rendezvous/file.js';
