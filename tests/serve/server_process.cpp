#include "serve/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace mkv::test {

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    throw std::runtime_error("cannot connect to the server on port " + std::to_string(port));
  return fd;
}

RawReply raw_exchange(int port, const std::string& request, double seconds) {
  const int fd = connect_loopback(port);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  RawReply reply;
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += std::size_t(n);
  }
  char buffer[65536];
  while (elapsed() < seconds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(1000 * (seconds - elapsed())) + 1) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      reply.closed = true;
      break;
    }
    reply.text.append(buffer, std::size_t(n));
  }
  reply.seconds = elapsed();
  ::close(fd);
  return reply;
}

int responses_in(const std::string& text) {
  int count = 0;
  for (std::size_t at = 0; (at = text.find("HTTP/1.1 ", at)) != std::string::npos; at += 9) ++count;
  return count;
}

std::string trained_model_path() { return std::string(MOMENTKV_SOURCE_DIR) + "/models/stories-needle-2k.gguf"; }

std::string capture_output(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  *status = ::pclose(pipe);
  return out;
}

std::filesystem::path npm_client_dir() {
  if (const char* dir = std::getenv("MOMENTKV_NPM_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::filesystem::path(cache) / "momentkv" / "npm";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "/root") / ".cache" / "momentkv" / "npm";
}

ServerProcess::ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<std::string> argv_text = {MOMENTKV_BIN, "serve", "--port", "0"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(MOMENTKV_BIN, argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  stderr_fd_ = fds[0];
  read_log(60, "listening on http://");
  const std::size_t at = log_.find("listening on http://");
  if (at == std::string::npos) throw std::runtime_error("the server did not start: " + log_);
  const std::size_t colon = log_.find(':', at + 20);
  port_ = std::atoi(log_.c_str() + colon + 1);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop(5);
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

void ServerProcess::read_log(double seconds, const std::string& until) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  char buffer[4096];
  while (until.empty() || log_.find(until) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{stderr_fd_, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) return;
    const ssize_t n = ::read(stderr_fd_, buffer, sizeof buffer);
    if (n <= 0) return;
    log_.append(buffer, std::size_t(n));
  }
}

namespace {

// The number `format` (e.g. "VmRSS: %ld kB") reads from a line of /proc/PID/status; -1 when absent.
long proc_status_field(pid_t pid, const char* format) {
  if (pid <= 0) return -1;
  FILE* status = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (!status) return -1;
  char line[256];
  long value = -1;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, format, &value) == 1) break;
  std::fclose(status);
  return value;
}

}  // namespace

long ServerProcess::rss_kib() const { return proc_status_field(pid_, "VmRSS: %ld kB"); }

long ServerProcess::threads() const { return proc_status_field(pid_, "Threads: %ld"); }

bool ServerProcess::running() const {
  if (pid_ <= 0) return false;
  int status = 0;
  return ::waitpid(pid_, &status, WNOHANG) == 0;
}

int ServerProcess::stop(double seconds) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    ::usleep(20000);
  }
  pid_ = -1;
  read_log(1, "");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace mkv::test
