#!/usr/bin/env node
// How the forward's tasks fall on T threads, without running them: the task list of
// forward_f32.h / forward_bf16_pairs.h (head-major, a head's query blocks as order.h lists them:
// largest and smallest work alternating; --order sorted: by decreasing work, the former list), claimed as
// thread_pool.cpp claims them ('dynamic': one task at a time, the old default; 'steal': contiguous
// ranges per thread with stealing from the back, Claim::kRanges, the new one; 'guided': runs of
// max(1, left / T), for comparison only), simulated with each task's cost in key blocks. A task
// whose head differs from the thread's previous one pays --remote (its head's K/V come from L3 or
// another core's L2, not its own L2).
//
//   node tools/research/schedule-sim.mjs [--shape 1,8,1024,64] [--threads 2,16]
//       [--qb 64] [--kb 128] [--remote 1] [--setup 0.25] [--order interleaved|sorted]
//
// --remote: unknown for 16 threads; on the 2-vCPU dev machine one thread with 32 heads in a
// head-scattered order costs no more CPU time than head-major (the L2 streamer hides L3 for tile
// loads), so the default is 1 and "switchesPerThread" is the locality measure. --setup: per-task
// cost (Q^T, output) in key blocks. Prints one JSON line per (causal, threads, claim): makespan
// over the ideal (total / T), tasks and head switches per thread.
function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const [B, H, S] = arg('shape', '1,8,1024,64').split(',').map(Number);
const threadList = arg('threads', '2,16').split(',').map(Number);
const QB = Number(arg('qb', '64'));
const KB = Number(arg('kb', '128'));
const remote = Number(arg('remote', '1'));
const setup = Number(arg('setup', '0.25'));
const orderKind = arg('order', 'interleaved');

// Key blocks visited by query block qb (upper-left causal or none), as order_query_blocks counts.
function work(qb, causal) {
  const i1 = Math.min(S, (qb + 1) * QB) - 1;
  const hi = causal ? i1 : S - 1;
  return Math.floor(hi / KB) + 1;
}

function tasks(causal) {
  const nqb = Math.ceil(S / QB);
  const sorted = [...Array(nqb).keys()].sort((a, b) => work(b, causal) - work(a, causal) || a - b);
  const order = orderKind === 'sorted' ? sorted : [];
  if (orderKind !== 'sorted')
    for (let lo = 0, hi = nqb - 1; lo <= hi;) order.push(order.length % 2 === 0 ? sorted[lo++] : sorted[hi--]);
  const list = [];
  for (let head = 0; head < B * H; head++) for (const qb of order) list.push({ head, cost: work(qb, causal) + setup });
  return list;
}

// 'steal': thread i owns the contiguous range [i n / T, (i + 1) n / T) and takes from its front;
// once it is empty the thread takes single tasks from the back of the range with the most left.
function simulateSteal(list, T) {
  const n = list.length;
  const ranges = Array.from({ length: T }, (_, i) => ({
    lo: Math.floor((i * n) / T),
    hi: Math.floor(((i + 1) * n) / T),
  }));
  const threads = Array.from({ length: T }, () => ({ t: 0, head: -1, tasks: 0, switches: 0 }));
  for (;;) {
    let i = 0;
    for (let k = 1; k < T; k++) if (threads[k].t < threads[i].t) i = k;
    const th = threads[i];
    let idx;
    if (ranges[i].lo < ranges[i].hi) idx = ranges[i].lo++;
    else {
      let v = -1;
      for (let k = 0; k < T; k++)
        if (ranges[k].hi - ranges[k].lo > 0 && (v < 0 || ranges[k].hi - ranges[k].lo > ranges[v].hi - ranges[v].lo))
          v = k;
      if (v < 0) break;
      idx = --ranges[v].hi;
    }
    runTask(th, list[idx]);
  }
  return summary(list, T, threads);
}

/** Thread th runs task: its cost, times `remote` when it moves to another head's K/V. */
function runTask(th, task) {
  const moved = task.head !== th.head;
  th.t += task.cost * (moved ? remote : 1);
  th.switches += moved ? 1 : 0;
  th.head = task.head;
  th.tasks++;
}

function summary(list, T, threads) {
  const total = list.reduce((s, x) => s + x.cost, 0);
  const makespan = Math.max(...threads.map((x) => x.t));
  return {
    makespanOverIdeal: +(makespan / (total / T)).toFixed(3),
    tasksPerThread: [Math.min(...threads.map((x) => x.tasks)), Math.max(...threads.map((x) => x.tasks))],
    switchesPerThread: +(threads.reduce((s, x) => s + x.switches, 0) / T).toFixed(1),
  };
}

function simulate(list, T, claim) {
  if (claim === 'steal') return simulateSteal(list, T);
  const n = list.length;
  let next = 0;
  const threads = Array.from({ length: T }, () => ({ t: 0, head: -1, tasks: 0, switches: 0 }));
  for (;;) {
    // The thread that is free first claims next (ties: lowest index).
    let th = threads[0];
    for (const x of threads) if (x.t < th.t) th = x;
    if (next >= n) break;
    const len = claim === 'guided' ? Math.max(1, Math.floor((n - next) / T)) : 1;
    for (let i = next; i < next + len; i++) {
      runTask(th, list[i]);
    }
    next += len;
  }
  return summary(list, T, threads);
}

for (const causal of [false, true]) {
  const list = tasks(causal);
  for (const T of threadList) {
    for (const claim of ['dynamic', 'guided', 'steal']) {
      console.log(
        JSON.stringify({ B, H, S, QB, KB, causal, threads: T, tasks: list.length, claim, ...simulate(list, T, claim) }),
      );
    }
  }
}
