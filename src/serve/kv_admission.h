// Admission by KV memory (`momentkv serve --kv-memory MiB`): every request reserves the bytes its
// cache will hold at its peak before it takes a slot, and waits, in arrival order, until the
// reservation fits under the cap beside those of the requests in progress. Once its prompt is
// compressed the reservation shrinks to what its cache then holds plus what decoding can add, so a
// compressed request leaves room for more requests than a full-cache one. Requests that wait (for
// memory or a slot) are bounded: past `max_waiting` a request is refused at once (503).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

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
    // Lowers the reservation to `bytes` (never raises it).
    void shrink(std::size_t bytes);
    std::size_t bytes() const { return bytes_; }

   private:
    friend class KvAdmission;
    Reservation(KvAdmission& owner, std::size_t bytes) : owner_(owner), bytes_(bytes) {}
    KvAdmission& owner_;
    std::size_t bytes_;
  };

  enum class Refusal { None, TooLarge, QueueFull };
  // Why reserve(bytes) would be refused at once (checked and counted under the same lock as the
  // wait, so a refusal is final): TooLarge when bytes exceed the cap, QueueFull when max_waiting
  // requests wait already. Otherwise waits for its turn and room, and returns the reservation.
  std::unique_ptr<Reservation> reserve(std::size_t bytes, Refusal& refusal);

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
  std::size_t reserved() const;
  int waiting() const;

 private:
  void release(std::size_t bytes);

  const std::size_t capacity_;
  const int max_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t reserved_ = 0;  // bytes of the reservations alive
  int waiting_ = 0;           // requests waiting for memory or a slot
  uint64_t next_ticket_ = 0;  // the ticket the next request draws
  uint64_t admitted_ = 0;     // tickets admitted so far (in order)
};

}  // namespace mkv::serve
