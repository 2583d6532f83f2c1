// The process's view of its own TCP connections, for what httplib 0.11.4 does not hand a handler:
// which descriptor carries a request, and which connections are open at all. A connection is
// named by its address pair, written as httplib writes a request's local_addr and remote_addr.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mkv::serve {

struct ConnectionAddresses {
  std::string local_host;  // numeric (getnameinfo NI_NUMERICHOST), as httplib's local_addr
  int local_port = -1;
  std::string peer_host;   // as httplib's remote_addr
  int peer_port = -1;
  bool operator==(const ConnectionAddresses&) const = default;
  auto operator<=>(const ConnectionAddresses&) const = default;
};

// The addresses of descriptor `fd` when it is a connected IPv4 or IPv6 socket.
std::optional<ConnectionAddresses> connection_addresses(int fd);

// The process's open descriptors (/proc/self/fd), in no particular order.
std::vector<int> open_descriptors();

}  // namespace mkv::serve
