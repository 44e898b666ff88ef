// A small fixed-size pool of std::threads owned by one object (the model kernel).
//
// ParallelFor(n, task) runs task(0..n−1) on the pool's threads plus the calling thread and
// returns when all are done. Which thread runs which index is not deterministic; callers
// that need reproducible results must write per-index outputs and combine them in order.
//
// Thread indices: 0 is the thread that calls ParallelFor/OnEachThread (the owner's thread),
// 1..size()−1 the spawned workers. An optional start hook runs once in every spawned
// worker (with its index) before it takes any work, e.g. to pin it to a core; the
// constructor returns after all hooks have run. The owner's thread is the caller's to place.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace homodyne::model {

class ThreadPool {
 public:
  // `threads` ≥ 1 is the total number of threads that work (threads − 1 are spawned).
  using ThreadHook = std::function<void(int thread_index)>;
  explicit ThreadPool(int threads, ThreadHook on_worker_start = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(index) for every index in [0, n_tasks); blocks until all finished. If a task
  // throws, the remaining indices are skipped and the first exception is rethrown here.
  // Not reentrant: one ParallelFor at a time per pool.
  void ParallelFor(int n_tasks, const std::function<void(int)>& task);

  // Runs fn(thread_index) exactly once on every thread of the pool (the caller as index 0)
  // and returns when all are done; the first exception is rethrown. For diagnostics (where
  // does each thread run?) and per-thread set-up.
  void OnEachThread(const ThreadHook& fn);

 private:
  void WorkerLoop(int index, const ThreadHook& on_start);
  void RunTasks();
  void RunBroadcast(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;
  const ThreadHook* broadcast_ = nullptr;  // OnEachThread's function (null: ParallelFor)
  int started_ = 0;                        // workers whose start hook has run
  int pending_ = 0;                        // workers yet to run broadcast_
  int n_tasks_ = 0;
  int next_ = 0;
  int busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace homodyne::model
