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

// A waiting request whose client leaves gives up its place: the one behind it moves up and is
// admitted as soon as it fits, and the abandoned one reserves nothing.
TEST(KvAdmission, AnAbandonedWaiterLeavesTheLine) {
  KvAdmission admission(100, 8);
  KvAdmission::Refusal refusal;
  auto big = admission.reserve(90, refusal);
  std::atomic<bool> client_left{false};
  KvAdmission::Refusal abandoned_refusal = KvAdmission::Refusal::None;
  std::thread first([&] {  // 50 bytes: waits for room, then its client leaves
    auto r = admission.reserve(50, abandoned_refusal, 0, [&] { return client_left.load(); });
    EXPECT_EQ(r, nullptr);
  });
  while (admission.waiting() < 1) std::this_thread::sleep_for(1ms);
  std::unique_ptr<KvAdmission::Reservation> second_held;
  std::atomic<bool> second_admitted{false};
  std::thread second([&] {  // 10 bytes, behind the 50: fits, but waits for its turn
    KvAdmission::Refusal r;
    second_held = admission.reserve(10, r, 0, [] { return false; });
    second_admitted = true;
  });
  while (admission.waiting() < 2) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(120ms);
  EXPECT_FALSE(second_admitted.load()) << "a later request overtook an earlier one";
  client_left = true;
  first.join();
  EXPECT_EQ(abandoned_refusal, KvAdmission::Refusal::Abandoned);
  second.join();  // moved up and fits beside the 90
  EXPECT_TRUE(second_admitted.load());
  EXPECT_EQ(admission.reserved(), 100u);
  EXPECT_EQ(admission.waiting(), 0);
  // Later requests are served in order too: the line did not stall at the abandoned ticket.
  second_held.reset();
  big.reset();
  EXPECT_NE(admission.reserve(100, refusal), nullptr);
}

// A request waiting for its prefill turn whose client leaves gives up the turn: the one behind it
// prefills as soon as the one ahead ends, not before.
TEST(KvAdmission, ARequestThatLeavesThePrefillLineLetsTheNextOneIn) {
  KvAdmission admission(1000, 8);
  KvAdmission::Refusal refusal;
  std::vector<std::unique_ptr<KvAdmission::Reservation>> held;
  for (int i = 0; i < 3; ++i) held.push_back(admission.reserve(10, refusal, 50));
  ASSERT_TRUE(held[0]->begin_prefill());
  std::atomic<bool> client_left{false}, leaver_returned{false}, third_began{false};
  bool leaver_began = true;
  std::thread leaver([&] {
    leaver_began = held[1]->begin_prefill([&] { return client_left.load(); });
    leaver_returned = true;
  });
  std::this_thread::sleep_for(30ms);  // the leaver is in line before the third
  std::thread third([&] {
    EXPECT_TRUE(held[2]->begin_prefill([] { return false; }));
    third_began = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(leaver_returned.load());
  client_left = true;
  leaver.join();
  EXPECT_FALSE(leaver_began);
  std::this_thread::sleep_for(120ms);
  EXPECT_FALSE(third_began.load()) << "two prefills ran at once";
  held[0]->end_prefill();
  third.join();
  EXPECT_TRUE(third_began.load());
  held[2]->end_prefill();
  held.clear();
  EXPECT_EQ(admission.reserved(), 0u);
}

// Compressed requests: 20 steady bytes each, 50 more while their prompt is read. A cap of 100
// holds three of them beside one prefill headroom (reserving each peak of 70 would hold one), and
// their prefills take turns.
TEST(KvAdmission, PrefillsShareOneHeadroomAndTakeTurns) {
  KvAdmission admission(100, 8);
  KvAdmission::Refusal refusal;
  EXPECT_EQ(admission.reserve(60, refusal, 41), nullptr);  // 101 at its peak can never fit
  EXPECT_EQ(refusal, KvAdmission::Refusal::TooLarge);
  std::vector<std::unique_ptr<KvAdmission::Reservation>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(admission.reserve(20, refusal, 50));
    ASSERT_NE(held.back(), nullptr);
  }
  EXPECT_EQ(admission.reserved(), 90u);  // 2 x 20 + one headroom of 50
  std::atomic<bool> third_admitted{false};
  std::unique_ptr<KvAdmission::Reservation> third_held;
  std::thread third([&] {
    KvAdmission::Refusal r;
    third_held = admission.reserve(20, r, 50);  // 110 > 100: waits for a prefill to end
    third_admitted = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(third_admitted.load());
  held[0]->begin_prefill();
  std::atomic<bool> second_began{false};
  std::thread second([&] {
    held[1]->begin_prefill();  // waits for the first prefill to end
    second_began = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(second_began.load()) << "two prefills ran at once";
  held[0]->shrink(15);
  held[0]->end_prefill();  // the headroom is still needed by the second: 15 + 20 + 50 = 85
  second.join();
  EXPECT_TRUE(second_began.load());
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(third_admitted.load()) << "admitted without room for its own prefill";
  held[1]->end_prefill();  // 15 + 20 + (third: 20 + its headroom 50) = 105 > 100: still waits
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(third_admitted.load());
  held[1]->shrink(10);  // 15 + 10 + 20 + 50 = 95
  third.join();
  EXPECT_TRUE(third_admitted.load());
  EXPECT_EQ(admission.reserved(), 95u);
  held.clear();
  third_held.reset();  // a reservation that never began its prefill ends it on destruction
  EXPECT_EQ(admission.reserved(), 0u);
  auto next = admission.reserve(20, refusal, 50);
  next->begin_prefill();  // the turns did not stall on the request that never prefilled
  next->end_prefill();
  EXPECT_EQ(admission.reserved(), 20u);
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
