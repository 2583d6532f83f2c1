#include "serve/socket_addresses.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace mkv::serve {
namespace {

// The numeric host and port of an address (getnameinfo with NI_NUMERICHOST, as httplib writes
// them). False for other families or on failure.
bool numeric_address(const sockaddr_storage& addr, socklen_t length, std::string& host, int& port) {
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return false;
  char host_text[NI_MAXHOST], port_text[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), length, host_text, sizeof host_text, port_text,
                  sizeof port_text, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = host_text;
  port = std::atoi(port_text);
  return true;
}

}  // namespace

std::optional<ConnectionAddresses> connection_addresses(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return std::nullopt;
  ConnectionAddresses a;
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0 ||
      !numeric_address(addr, length, a.peer_host, a.peer_port))
    return std::nullopt;
  length = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0 ||
      !numeric_address(addr, length, a.local_host, a.local_port))
    return std::nullopt;
  return a;
}

std::vector<int> open_descriptors() {
  std::vector<int> fds;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    char* end = nullptr;
    const std::string name = entry.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end != name.c_str() && *end == '\0') fds.push_back(int(fd));
  }
  return fds;
}

}  // namespace mkv::serve
