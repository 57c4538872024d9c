// A process-wide pool of std::threads that runs index ranges ("jobs"). Several jobs may run at once
// (a sync call on the main thread while async calls run on libuv workers); each job is served by
// at most its own thread budget, the calling thread included, so calls do not oversubscribe.
#pragma once
#include <cstdint>

namespace attn_cpu {

using TaskFn = void (*)(void* ctx, int64_t task);

// How threads claim tasks.
//   kSingle: one task at a time from a shared counter, in increasing order. Balanced; but at many
//            threads a thread's consecutive tasks are `threads` apart in the list, so tasks that
//            share data (a head's K and V) run on different cores and each fetches it again.
//   kRanges: participant i owns the contiguous range [i n / P, (i + 1) n / P) and runs it front
//            to back (its tasks share heads: K/V stay in its L2); a participant whose range is
//            empty takes single tasks from the back of the range with the most left (balance).
enum class Claim { kSingle, kRanges };

// Runs fn(ctx, t) for every t in [0, n) on up to `threads` threads (the caller is one of them) and
// returns when all are done. The first exception a task throws is rethrown here after the
// remaining tasks are skipped.
void parallel_for(int64_t n, int threads, TaskFn fn, void* ctx, Claim claim = Claim::kSingle);

// Threads the pool has started so far (grows on demand, never shrinks).
int pool_threads();

// Calls f(t) for t in [0, n) through parallel_for; F is any callable (a lambda).
template <class F>
void parallel_for_each(int64_t n, int threads, const F& f, Claim claim = Claim::kSingle) {
  parallel_for(n, threads, [](void* ctx, int64_t t) { (*static_cast<const F*>(ctx))(t); }, const_cast<F*>(&f), claim);
}

}  // namespace attn_cpu
