#include "serve/client_connection.h"

#include <poll.h>

#include "serve/socket_addresses.h"

namespace mkv::serve {

ClientConnection::ClientConnection(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  const ConnectionAddresses wanted{req.local_addr, req.local_port, req.remote_addr, req.remote_port};
  for (const int fd : open_descriptors())
    if (connection_addresses(fd) == wanted) {
      fd_ = fd;
      return;
    }
}

bool ClientConnection::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;  // nothing to read, no hang-up: still there
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace mkv::serve
