// Admission by KV memory (`momentkv serve --kv-memory MiB`): every request reserves the bytes its
// cache will hold, and waits, in arrival order, until the reservation fits under the cap beside
// those of the requests in progress. A compressed request's reservation has two parts: `bytes`,
// what its cache holds once its prompt is compressed plus what decoding can add, and
// `prefill_bytes`, the extra that its uncompressed prompt needs while it is prefilled. Prefills
// take turns (begin_prefill / end_prefill), so the cap holds the steady parts of every admitted
// request plus one prefill headroom, the largest prefill_bytes among the admitted requests whose
// prompt is not in yet: many compressed sessions fit beside one prompt being read, where reserving
// every prompt's peak would admit only as many as there are whole prompts in the cap. Requests
// that wait (for memory or a slot) are bounded: past `max_waiting` a request is refused at once
// (503).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "serve/ticket_line.h"

namespace mkv::serve {

class KvAdmission {
 public:
  // capacity_bytes 0: no cap (reservations are counted, never waited for).
  KvAdmission(std::size_t capacity_bytes, int max_waiting);

  class Reservation {
   public:
    ~Reservation();
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    // Lowers the steady part to `bytes` (never raises it).
    void shrink(std::size_t bytes);
    std::size_t bytes() const { return bytes_; }
    // Waits for the prefills that began before this one to end (requests without prefill_bytes
    // return at once); the prompt may then grow the cache by up to prefill_bytes. `abandon`, when
    // given, is asked every 50 ms while waiting: true leaves the line and returns false (the
    // client left; the reservation is then released as usual).
    bool begin_prefill(const std::function<bool()>& abandon = {});
    // The prompt is in (and compressed): its prefill_bytes are no longer needed, the next prefill
    // may begin. Called by the destructor when the request ends before.
    void end_prefill();

   private:
    friend class KvAdmission;
    Reservation(KvAdmission& owner, std::size_t bytes, std::size_t prefill_bytes)
        : owner_(owner), bytes_(bytes), prefill_bytes_(prefill_bytes) {}
    KvAdmission& owner_;
    std::size_t bytes_;
    std::size_t prefill_bytes_;  // 0 once the prefill ended
    bool prefilling_ = false;    // its prefill turn came (begin_prefill returned true), end_prefill not yet
  };

  enum class Refusal { None, TooLarge, QueueFull, Abandoned };
  // Why reserve(bytes, prefill_bytes) would be refused at once (checked and counted under the same
  // lock as the wait, so a refusal is final): TooLarge when bytes + prefill_bytes exceed the cap,
  // QueueFull when max_waiting requests wait already. Otherwise waits for its turn and room (the
  // steady parts, plus the prefill headroom with this request's prefill_bytes, under the cap),
  // and returns the reservation. `abandon`, when given, is asked every 50 ms while waiting: true
  // leaves the line (refusal Abandoned, nullptr; the client left).
  std::unique_ptr<Reservation> reserve(std::size_t bytes, Refusal& refusal, std::size_t prefill_bytes = 0,
                                       const std::function<bool()>& abandon = {});

  // Marks a request as waiting for something else too (a slot), for the queue bound.
  class Waiting {
   public:
    explicit Waiting(KvAdmission& owner);
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    KvAdmission& owner_;
  };

  std::size_t capacity() const { return capacity_; }
  // The steady parts of the reservations alive plus the prefill headroom.
  std::size_t reserved() const;
  int waiting() const;

 private:
  void release(std::size_t bytes);
  std::size_t headroom() const { return pending_prefills_.empty() ? 0 : *pending_prefills_.rbegin(); }

  const std::size_t capacity_;
  const int max_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t reserved_ = 0;  // steady bytes of the reservations alive
  std::multiset<std::size_t> pending_prefills_;  // prefill_bytes of the admitted requests not past their prefill
  TicketLine prefill_line_;   // the admitted requests waiting to prefill; the first one prefills
  int waiting_ = 0;           // requests waiting for memory or a slot
  TicketLine line_;           // the requests waiting for memory
};

}  // namespace mkv::serve
