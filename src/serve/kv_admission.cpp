#include "serve/kv_admission.h"

#include <algorithm>

namespace mkv::serve {

KvAdmission::KvAdmission(std::size_t capacity_bytes, int max_waiting)
    : capacity_(capacity_bytes), max_waiting_(max_waiting) {}

KvAdmission::Reservation::~Reservation() { owner_.release(bytes_); }

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

std::unique_ptr<KvAdmission::Reservation> KvAdmission::reserve(std::size_t bytes, Refusal& refusal) {
  std::unique_lock lock(mutex_);
  refusal = Refusal::None;
  if (capacity_ > 0 && bytes > capacity_) {
    refusal = Refusal::TooLarge;
    return nullptr;
  }
  if (waiting_ >= max_waiting_) {
    refusal = Refusal::QueueFull;
    return nullptr;
  }
  ++waiting_;
  const uint64_t ticket = next_ticket_++;
  changed_.wait(lock, [&] { return admitted_ == ticket && (capacity_ == 0 || reserved_ + bytes <= capacity_); });
  ++admitted_;
  --waiting_;
  reserved_ += bytes;
  lock.unlock();
  changed_.notify_all();  // the next ticket may fit too
  return std::unique_ptr<Reservation>(new Reservation(*this, bytes));
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
  return reserved_;
}

int KvAdmission::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

}  // namespace mkv::serve
