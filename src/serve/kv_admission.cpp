#include "serve/kv_admission.h"

#include <algorithm>

namespace mkv::serve {

KvAdmission::KvAdmission(std::size_t capacity_bytes, int max_waiting)
    : capacity_(capacity_bytes), max_waiting_(max_waiting) {}

KvAdmission::Reservation::~Reservation() {
  end_prefill();
  owner_.release(bytes_);
}

bool KvAdmission::Reservation::begin_prefill(const std::function<bool()>& abandon) {
  if (prefill_bytes_ == 0 || prefilling_) return true;
  std::unique_lock lock(owner_.mutex_);
  const uint64_t ticket = owner_.prefill_line_.join();
  if (!wait_unless_abandoned(owner_.changed_, lock, [&] { return owner_.prefill_line_.first(ticket); }, abandon)) {
    owner_.prefill_line_.leave(ticket);
    lock.unlock();
    owner_.changed_.notify_all();  // the one behind may be first now
    return false;
  }
  prefilling_ = true;
  return true;
}

void KvAdmission::Reservation::end_prefill() {
  if (prefill_bytes_ == 0) return;
  {
    std::lock_guard lock(owner_.mutex_);
    owner_.pending_prefills_.erase(owner_.pending_prefills_.find(prefill_bytes_));
    if (prefilling_) owner_.prefill_line_.serve();
  }
  prefill_bytes_ = 0;
  prefilling_ = false;
  owner_.changed_.notify_all();
}

void KvAdmission::Reservation::shrink(std::size_t bytes) {
  if (bytes >= bytes_) return;
  owner_.release(bytes_ - bytes);
  bytes_ = bytes;
}

KvAdmission::Waiting::Waiting(KvAdmission& owner) : owner_(owner) {
  std::lock_guard lock(owner_.mutex_);
  ++owner_.waiting_;
}

KvAdmission::Waiting::~Waiting() {
  std::lock_guard lock(owner_.mutex_);
  --owner_.waiting_;
}

std::unique_ptr<KvAdmission::Reservation> KvAdmission::reserve(std::size_t bytes, Refusal& refusal,
                                                               std::size_t prefill_bytes,
                                                               const std::function<bool()>& abandon) {
  std::unique_lock lock(mutex_);
  refusal = Refusal::None;
  if (capacity_ > 0 && bytes + prefill_bytes > capacity_) {
    refusal = Refusal::TooLarge;
    return nullptr;
  }
  if (waiting_ >= max_waiting_) {
    refusal = Refusal::QueueFull;
    return nullptr;
  }
  ++waiting_;
  const uint64_t ticket = line_.join();
  const bool admitted = wait_unless_abandoned(changed_, lock, [&] {
    return line_.first(ticket) && (capacity_ == 0 || reserved_ + bytes + std::max(headroom(), prefill_bytes) <= capacity_);
  }, abandon);
  --waiting_;
  if (!admitted) {
    line_.leave(ticket);
    refusal = Refusal::Abandoned;
    lock.unlock();
    changed_.notify_all();  // the tickets behind moved up
    return nullptr;
  }
  line_.serve();
  reserved_ += bytes;
  if (prefill_bytes > 0) pending_prefills_.insert(prefill_bytes);
  lock.unlock();
  changed_.notify_all();  // the next ticket may fit too
  return std::unique_ptr<Reservation>(new Reservation(*this, bytes, prefill_bytes));
}

void KvAdmission::release(std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    reserved_ -= std::min(bytes, reserved_);
  }
  changed_.notify_all();
}

std::size_t KvAdmission::reserved() const {
  std::lock_guard lock(mutex_);
  return reserved_ + headroom();
}

int KvAdmission::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

}  // namespace mkv::serve
