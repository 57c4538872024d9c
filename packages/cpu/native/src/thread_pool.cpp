#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attn_cpu {
namespace {

constexpr int kMaxThreads = 1024;

struct Job {
  TaskFn fn;
  void* ctx;
  int64_t n;
  int max_helpers;                 // pool threads allowed besides the caller
  std::atomic<int64_t> next{0};    // next unclaimed task
  int helpers = 0;                 // pool threads inside run(); guarded by Pool::mu
  std::mutex error_mu;
  std::exception_ptr error;
};

void run_tasks(Job& job) {
  for (;;) {
    const int64_t t = job.next.fetch_add(1, std::memory_order_relaxed);
    if (t >= job.n) return;
    try {
      job.fn(job.ctx, t);
    } catch (...) {
      std::lock_guard<std::mutex> lk(job.error_mu);
      if (!job.error) job.error = std::current_exception();
      job.next.store(job.n, std::memory_order_relaxed);  // skip what is left
    }
  }
}

class Pool {
 public:
  void run(int64_t n, int threads, TaskFn fn, void* ctx) {
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.max_helpers = static_cast<int>(std::min<int64_t>(std::min(threads, kMaxThreads) - 1, n - 1));
    if (job.max_helpers > 0) {
      std::lock_guard<std::mutex> lk(mu_);
      grow(job.max_helpers);
      jobs_.push_back(&job);
      cv_work_.notify_all();
    }
    run_tasks(job);
    if (job.max_helpers > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      // No new helper can join once the job is off the list; wait for those inside it.
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      cv_done_.wait(lk, [&] { return job.helpers == 0; });
    }
    if (job.error) std::rethrow_exception(job.error);
  }

  int size() {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int>(threads_);
  }

 private:
  // Starts pool threads until there are k of them. Holds mu_.
  void grow(int k) {
    while (threads_ < static_cast<size_t>(k)) {
      std::thread([this] { loop(); }).detach();  // the pool lives as long as the process
      ++threads_;
    }
  }

  Job* pick() {
    for (Job* j : jobs_) {
      if (j->helpers < j->max_helpers && j->next.load(std::memory_order_relaxed) < j->n) return j;
    }
    return nullptr;
  }

  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      Job* job = nullptr;
      cv_work_.wait(lk, [&] { return (job = pick()) != nullptr; });
      ++job->helpers;
      lk.unlock();
      run_tasks(*job);
      lk.lock();
      if (--job->helpers == 0) cv_done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::vector<Job*> jobs_;
  size_t threads_ = 0;
};

// Never destroyed: detached threads may still wait on it while the process exits.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

}  // namespace

void parallel_for(int64_t n, int threads, TaskFn fn, void* ctx) {
  if (n <= 0) return;
  pool().run(n, std::max(threads, 1), fn, ctx);
}

int pool_threads() { return pool().size(); }

}  // namespace attn_cpu
