// Polling for tests with real threads: wait until a condition holds instead of sleeping a fixed
// time, so a test is as fast as the code allows and only a real failure waits out the limit.
#pragma once

#include <chrono>
#include <thread>

namespace sdn::test {

// Calls `pred` every 2 ms until it returns true or `limit` passes; returns its last answer.
template <class Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

}  // namespace sdn::test
