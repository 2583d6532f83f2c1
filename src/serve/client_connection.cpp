#include "serve/client_connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace mkv::serve {
namespace {

// The numeric host and port of an address, written as httplib writes a request's remote_addr and
// local_addr (getnameinfo with NI_NUMERICHOST). False for other families or on failure.
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

// Whether descriptor fd is a socket connecting local_host:local_port to peer_host:peer_port.
bool is_connection(int fd, const std::string& local_host, int local_port, const std::string& peer_host, int peer_port) {
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return false;
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  std::string host;
  int port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0 || !numeric_address(addr, length, host, port) ||
      port != peer_port || host != peer_host)
    return false;
  length = sizeof addr;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0 &&
         numeric_address(addr, length, host, port) && port == local_port && host == local_host;
}

}  // namespace

ClientConnection::ClientConnection(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    char* end = nullptr;
    const std::string name = entry.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0') continue;
    if (is_connection(int(fd), req.local_addr, req.local_port, req.remote_addr, req.remote_port)) {
      fd_ = int(fd);
      return;
    }
  }
}

bool ClientConnection::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;  // nothing to read, no hang-up: still there
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace mkv::serve
