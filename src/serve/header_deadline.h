// Closes the connections that take longer than a limit to send a request's headers, counted from
// the connection's start or from the end of its previous reply (nginx's client_header_timeout),
// and those whose request body is not in whole within a second limit of the start of its reading
// (a body trickled a byte at a time, or a Content-Length larger than what is sent, would otherwise
// hold a thread for --timeout per read, each byte starting the wait again).
// httplib gives every connection one of the server's HTTP threads and waits up to --timeout for
// each read, so a few dozen clients that send their headers a byte at a time, or stop halfway,
// would otherwise hold every thread, and the server would answer nobody else, for that long.
// A connection whose bytes wait unread in its socket is waiting for a free thread, not late. A
// connection past its deadline is sent `farewell` (a 408 reply) and shut down; its thread then
// reads the end of the stream and closes it. Connections are found among the process's sockets
// (socket_addresses.h) by a watcher thread that looks every limit / 4 (50 ms to 1 s).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "serve/socket_addresses.h"

namespace mkv::serve {

class HeaderDeadline {
 public:
  // Watches the connections accepted on local port `port`, from now until destruction. `farewell`
  // and `body_farewell`: what a connection late with its headers, or with its body, is sent.
  HeaderDeadline(int port, std::chrono::milliseconds limit, std::string farewell, std::chrono::milliseconds body_limit,
                 std::string body_farewell);
  ~HeaderDeadline();
  HeaderDeadline(const HeaderDeadline&) = delete;
  HeaderDeadline& operator=(const HeaderDeadline&) = delete;

  // The request's headers are in: its connection has no deadline until its reply has been sent.
  void headers_read(const httplib::Request& req);
  // A route has begun to read the request's body: it is due whole within the body limit.
  void body_started(const httplib::Request& req);
  // The body has been read (or refused): no deadline until the reply has been sent.
  void body_finished(const httplib::Request& req);
  // The reply has been sent: the next request's headers are due within the limit.
  void reply_sent(const httplib::Request& req);
  // Connections closed for being late with their headers or bodies, so far.
  uint64_t closed() const { return closed_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    bool in_request = false;  // between headers_read and reply_sent: no deadline but the body's
    bool in_body = false;     // between body_started and body_finished: due by body_due
    bool closing = false;     // shut down by the watcher, not yet gone from the process
    Clock::time_point since;  // the deadline runs from here (first seen, or the last reply)
    Clock::time_point touched;  // last seen by a look or changed by a request
    Clock::time_point body_due;
  };

  void watch();
  void look();  // one pass over the process's sockets

  const int port_;
  const std::chrono::milliseconds limit_;
  const std::string farewell_;
  const std::chrono::milliseconds body_limit_;
  const std::string body_farewell_;
  std::atomic<uint64_t> closed_{0};
  std::mutex mutex_;
  std::condition_variable stop_changed_;
  bool stopping_ = false;
  std::map<ConnectionAddresses, Connection> connections_;  // (mutex_) the connections seen or requesting
  std::thread watcher_;  // last: started once the rest is built
};

}  // namespace mkv::serve
