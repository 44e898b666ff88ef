#include "model/thread_pool.h"

#include "core/errors.h"

namespace homodyne::model {

ThreadPool::ThreadPool(int threads, ThreadHook on_worker_start) {
  if (threads < 1) ThrowBadInput("the model kernel needs at least one thread", {}, "threads");
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int w = 1; w < threads; ++w) {
    workers_.emplace_back([this, w, on_worker_start] { WorkerLoop(w, on_worker_start); });
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return started_ == threads - 1; });
  if (error_) {  // a start hook failed: no destructor will run, so stop the workers here
    auto error = error_;
    stop_ = true;
    lock.unlock();
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
    std::rethrow_exception(error);
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

// Must be called with mutex_ held; returns with it held. Takes indices one at a time
// until none are left. A throwing task cancels the remaining indices.
void ThreadPool::RunTasks() {
  while (next_ < n_tasks_) {
    const int index = next_++;
    const auto* task = task_;
    mutex_.unlock();
    std::exception_ptr failure;
    try {
      (*task)(index);
    } catch (...) {
      failure = std::current_exception();
    }
    mutex_.lock();
    if (failure) {
      if (!error_) error_ = failure;
      next_ = n_tasks_;
    }
  }
}

// Must be called with mutex_ held; returns with it held.
void ThreadPool::RunBroadcast(int index) {
  const auto* fn = broadcast_;
  mutex_.unlock();
  std::exception_ptr failure;
  try {
    (*fn)(index);
  } catch (...) {
    failure = std::current_exception();
  }
  mutex_.lock();
  if (failure && !error_) error_ = failure;
  if (--pending_ == 0) done_.notify_all();
}

void ThreadPool::WorkerLoop(int index, const ThreadHook& on_start) {
  std::exception_ptr failure;
  if (on_start) {
    try {
      on_start(index);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  std::unique_lock lock(mutex_);
  if (failure && !error_) error_ = failure;
  ++started_;
  done_.notify_all();
  std::uint64_t seen = generation_;
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    // The unique_lock still owns the (held) mutex in both.
    if (broadcast_ != nullptr) {
      RunBroadcast(index);
    } else {
      RunTasks();
    }
    if (--busy_ == 0) done_.notify_all();
  }
}

void ThreadPool::OnEachThread(const ThreadHook& fn) {
  std::unique_lock lock(mutex_);
  broadcast_ = &fn;
  pending_ = static_cast<int>(workers_.size());
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  lock.unlock();
  std::exception_ptr failure;
  try {
    fn(0);
  } catch (...) {
    failure = std::current_exception();
  }
  lock.lock();
  if (failure && !error_) error_ = failure;
  done_.wait(lock, [&] { return pending_ == 0 && busy_ == 0; });
  broadcast_ = nullptr;
  if (error_) {
    auto error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadPool::ParallelFor(int n_tasks, const std::function<void(int)>& task) {
  if (n_tasks <= 0) return;
  std::unique_lock lock(mutex_);
  task_ = &task;
  n_tasks_ = n_tasks;
  next_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  ++busy_;
  RunTasks();
  --busy_;
  // Late workers find next_ ≥ n_tasks_ and never touch task_ again.
  done_.wait(lock, [&] { return busy_ == 0; });
  task_ = nullptr;
  if (error_) {
    auto error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

}  // namespace homodyne::model
