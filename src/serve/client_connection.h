// Whether the client of a request is still connected. httplib 0.11.4 hands a handler no view of
// its connection, and a generation that writes nothing until its end (a non-streaming reply) would
// otherwise run to its last token for a client that left. The connection is found by its address
// pair among the process's sockets.
#pragma once

#include <httplib.h>

namespace mkv::serve {

class ClientConnection {
 public:
  // Finds the socket whose local and peer addresses are the request's. A request's socket stays
  // open (and its descriptor its own) until the handler and its content provider have returned,
  // so the descriptor found is valid for as long as they use this object.
  explicit ClientConnection(const httplib::Request& req);

  // True once the client has closed or reset the connection (or shut down its sending side, which
  // an HTTP/1.1 client does only when it leaves). False when the socket was not found.
  bool gone() const;

 private:
  int fd_ = -1;
};

}  // namespace mkv::serve
