// KvAdmission (src/serve/kv_admission.h): reservations under a cap, granted in arrival order,
// shrinking frees room for waiting requests, and refusals for a request larger than the cap or a
// full queue.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "serve/kv_admission.h"

namespace mkv::serve {
namespace {

using namespace std::chrono_literals;

TEST(KvAdmission, RefusesWhatCanNeverFitAndAFullQueue) {
  KvAdmission admission(100, 1);
  KvAdmission::Refusal refusal;
  EXPECT_EQ(admission.reserve(101, refusal), nullptr);
  EXPECT_EQ(refusal, KvAdmission::Refusal::TooLarge);
  auto first = admission.reserve(100, refusal);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(refusal, KvAdmission::Refusal::None);
  EXPECT_EQ(admission.reserved(), 100u);
  std::thread waiter([&] {
    KvAdmission::Refusal r;
    auto second = admission.reserve(60, r);  // waits for room: the queue's one place
    EXPECT_NE(second, nullptr);
  });
  while (admission.waiting() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(admission.reserve(10, refusal), nullptr);  // the queue is full
  EXPECT_EQ(refusal, KvAdmission::Refusal::QueueFull);
  first.reset();
  waiter.join();
  EXPECT_EQ(admission.reserved(), 0u);
}

// A later, smaller request does not overtake an earlier one that does not fit yet.
TEST(KvAdmission, ShrinkingAdmitsWaitersInArrivalOrder) {
  KvAdmission admission(100, 8);
  KvAdmission::Refusal refusal;
  auto big = admission.reserve(90, refusal);
  std::atomic<int> admitted{0};
  std::vector<std::unique_ptr<KvAdmission::Reservation>> held(2);
  const std::size_t sizes[2] = {50, 10};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&, i] {
      KvAdmission::Refusal r;
      held[i] = admission.reserve(sizes[i], r);
      ++admitted;
    });
    while (admission.waiting() < i + 1) std::this_thread::sleep_for(1ms);  // arrival order: 50, then 10
  }
  big->shrink(70);  // 30 free: the 10 would fit, but the 50 came first
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(admitted.load(), 0) << "a later request overtook an earlier one";
  EXPECT_EQ(admission.waiting(), 2);
  big->shrink(40);  // 60 free: the 50, then the 10
  for (auto& t : waiters) t.join();
  EXPECT_EQ(admitted.load(), 2);
  EXPECT_EQ(admission.reserved(), 100u);
  big->shrink(50);  // shrinking never raises a reservation
  EXPECT_EQ(big->bytes(), 40u);
  big.reset();
  held.clear();
  EXPECT_EQ(admission.reserved(), 0u);
}

TEST(KvAdmission, NoCapCountsButNeverWaits) {
  KvAdmission admission(0, 4);
  KvAdmission::Refusal refusal;
  auto a = admission.reserve(std::size_t(1) << 40, refusal);
  auto b = admission.reserve(std::size_t(1) << 40, refusal);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(admission.reserved(), std::size_t(2) << 40);
}

}  // namespace
}  // namespace mkv::serve
