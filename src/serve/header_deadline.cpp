#include "serve/header_deadline.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace mkv::serve {
namespace {

ConnectionAddresses addresses_of(const httplib::Request& req) {
  return {req.local_addr, req.local_port, req.remote_addr, req.remote_port};
}

}  // namespace

HeaderDeadline::HeaderDeadline(int port, std::chrono::milliseconds limit, std::string farewell,
                               std::chrono::milliseconds body_limit, std::string body_farewell)
    : port_(port),
      limit_(limit),
      farewell_(std::move(farewell)),
      body_limit_(body_limit),
      body_farewell_(std::move(body_farewell)),
      watcher_([this] { watch(); }) {}

HeaderDeadline::~HeaderDeadline() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_changed_.notify_all();
  watcher_.join();
}

void HeaderDeadline::headers_read(const httplib::Request& req) {
  const std::lock_guard lock(mutex_);
  Connection& c = connections_[addresses_of(req)];
  c.in_request = true;
  c.touched = Clock::now();
}

void HeaderDeadline::body_started(const httplib::Request& req) {
  const std::lock_guard lock(mutex_);
  Connection& c = connections_[addresses_of(req)];
  c.in_body = true;
  c.touched = Clock::now();
  c.body_due = c.touched + body_limit_;
}

void HeaderDeadline::body_finished(const httplib::Request& req) {
  const std::lock_guard lock(mutex_);
  Connection& c = connections_[addresses_of(req)];
  c.in_body = false;
  c.touched = Clock::now();
}

void HeaderDeadline::reply_sent(const httplib::Request& req) {
  const std::lock_guard lock(mutex_);
  Connection& c = connections_[addresses_of(req)];
  c.in_request = c.in_body = false;
  c.since = c.touched = Clock::now();
}

void HeaderDeadline::watch() {
  const auto period = std::clamp<std::chrono::milliseconds>(std::min(limit_, body_limit_) / 4,
                                                            std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  std::unique_lock lock(mutex_);
  while (!stop_changed_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    look();
    lock.lock();
  }
}

void HeaderDeadline::look() {
  const Clock::time_point now = Clock::now();
  struct Open {
    int fd;
    ConnectionAddresses addresses;
    bool unread;  // bytes the server has not read yet wait in the socket
  };
  std::vector<Open> open;  // the server's connections now
  for (const int fd : open_descriptors())
    if (std::optional<ConnectionAddresses> a = connection_addresses(fd); a && a->local_port == port_) {
      int unread = 0;
      open.push_back({fd, std::move(*a), ::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0});
    }
  struct Late {
    int fd;
    ConnectionAddresses addresses;
    const std::string* farewell;
  };
  std::vector<Late> late;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [fd, addresses, unread] : open) {
      Connection& c = connections_.try_emplace(addresses, Connection{.since = now, .touched = now, .body_due = now}).first->second;
      c.touched = std::max(c.touched, now);
      // Unread bytes: the client has sent, and the connection waits for one of the server's
      // threads (all busy), which is no lateness of the client's.
      if (unread) c.since = now;
      if (c.closing) continue;
      if (!c.in_request && now - c.since > limit_) {
        c.closing = true;
        late.push_back({fd, addresses, &farewell_});
      } else if (c.in_body && now > c.body_due) {
        c.closing = true;
        late.push_back({fd, addresses, &body_farewell_});
      }
    }
    // Forget the connections that are gone: not seen now and not touched by a request since this
    // look began (one accepted after the listing may already have sent its headers).
    std::erase_if(connections_, [&](const auto& entry) { return entry.second.touched < now; });
  }
  for (const auto& [fd, addresses, farewell] : late) {
    // The descriptor is looked at again just before: the connection may have ended since the
    // listing and its number been given to another.
    if (connection_addresses(fd) != addresses) continue;
    ::send(fd, farewell->data(), farewell->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_RDWR);
    closed_ += 1;
  }
}

}  // namespace mkv::serve
