// ParallelFor: split [0, n) into contiguous chunks and run them on a few
// threads, for the per-rank and per-step passes of the detectors over
// 10^8 step records (docs/performance.md). Each index is visited exactly
// once, so a body that writes only its own slots gives the same result on
// any number of threads: the reports stay byte-identical.
//
// Threads are started per call and joined before it returns (a pass takes
// tens of milliseconds at the sizes where it is used; starting a thread
// takes tens of microseconds). Small inputs run inline on the caller.
//
// Thread-safety: `body` runs concurrently on disjoint ranges; it must not
// write state that another range reads.

#ifndef LAGGARD_BASE_PARALLEL_H_
#define LAGGARD_BASE_PARALLEL_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace laggard {

// The threads a pass gets: `requested` (0: one per core), at most one per
// `min_per_thread` items and at least 1.
inline unsigned ParallelThreads(unsigned requested, size_t n, size_t min_per_thread) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned want = requested == 0 ? cores : requested;
  size_t by_size = std::max<size_t>(1, n / std::max<size_t>(1, min_per_thread));
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(want, by_size)));
}

// Calls body(begin, end, worker) for `threads` contiguous chunks of [0, n),
// worker in [0, threads); chunk `worker` is [n * worker / threads,
// n * (worker + 1) / threads). Chunk 0 runs on the calling thread.
template <typename Body>
void ParallelFor(size_t n, unsigned threads, const Body& body) {
  threads = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(1, n)));
  auto chunk = [&](unsigned w) {
    size_t begin = n * w / threads, end = n * (w + 1) / threads;
    if (begin < end) body(begin, end, w);
  };
  if (threads == 1) {
    chunk(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned w = 1; w < threads; ++w) pool.emplace_back(chunk, w);
  chunk(0);
  for (std::thread& t : pool) t.join();
}

// An allocator whose value-less construct() leaves a trivial T
// uninitialised: resize() of a ParallelBuffer costs no serial memset, and
// the threads that fill it touch its pages first (at 10^8 step records the
// zero-fill of two 400 MB matrices was a third of the detector's serial time).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: rebind
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(static_cast<std::allocator<T>&>(*this), p,
                                                        std::forward<Args>(args)...);
  }
};

// A vector for a parallel pass to fill: every element must be written
// before it is read.
template <typename T>
using ParallelBuffer = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace laggard

#endif  // LAGGARD_BASE_PARALLEL_H_
