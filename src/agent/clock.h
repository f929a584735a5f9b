// The agent's clock seam. Every timestamp the agent writes (metrics, the
// rolling log, step receipt times) and every time-dependent decision (rank
// expiry, scripted fake GPUs) reads a Clock, so tests drive time by hand with
// ManualClock while the real agent uses SystemClock. Waiting between samples
// is not part of the seam: the sampling loop sleeps on a steady clock and
// tests call Agent::SampleOnce() instead of waiting.
//
// Thread-safety: Now() may be called from any thread.

#ifndef LAGGARD_AGENT_CLOCK_H_
#define LAGGARD_AGENT_CLOCK_H_

#include <atomic>

#include "model/time.h"

namespace laggard::agent {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, Unix epoch nanoseconds.
  virtual TimeNs Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimeNs Now() const override;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeNs start) : now_(start) {}
  TimeNs Now() const override { return now_.load(std::memory_order_relaxed); }
  void Set(TimeNs t) { now_.store(t, std::memory_order_relaxed); }
  void Advance(DurationNs d) { now_.fetch_add(d, std::memory_order_relaxed); }

 private:
  std::atomic<TimeNs> now_;
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_CLOCK_H_
