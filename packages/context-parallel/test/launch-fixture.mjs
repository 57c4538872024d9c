// A stand-in rank program for the launcher's CPU test (src/nccl/launch.test.ts): the rank named by
// the job's `failRank` exits 3 at once with a message; every other rank hangs, as a rank blocked in
// a transfer to a dead peer would. The launcher must kill the hanging ones and fail the job fast.
const rank = Number(process.argv[2]);
const job = JSON.parse(process.argv[3]);
if (rank === job.failRank) {
  console.error(`fixture rank ${rank}: injected failure`);
  process.exit(3);
}
setInterval(() => undefined, 1_000); // hangs until killed
