// A process-wide pool of std::threads that runs index ranges ("jobs"). Several jobs may run at once
// (a sync call on the main thread while async calls run on libuv workers); each job is served by
// at most its own thread budget, the calling thread included, so calls do not oversubscribe.
#pragma once
#include <cstdint>

namespace attn_cpu {

using TaskFn = void (*)(void* ctx, int64_t task);

// Runs fn(ctx, t) for every t in [0, n) on up to `threads` threads (the caller is one of them) and
// returns when all are done. Tasks are claimed in increasing order. The first exception a task
// throws is rethrown here after the remaining tasks are skipped.
void parallel_for(int64_t n, int threads, TaskFn fn, void* ctx);

// Threads the pool has started so far (grows on demand, never shrinks).
int pool_threads();

// Calls f(t) for t in [0, n) through parallel_for; F is any callable (a lambda).
template <class F>
void parallel_for_each(int64_t n, int threads, const F& f) {
  parallel_for(n, threads, [](void* ctx, int64_t t) { (*static_cast<const F*>(ctx))(t); },
               const_cast<F*>(&f));
}

}  // namespace attn_cpu
