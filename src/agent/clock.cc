#include "agent/clock.h"

#include <chrono>

namespace laggard::agent {

TimeNs SystemClock::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace laggard::agent
