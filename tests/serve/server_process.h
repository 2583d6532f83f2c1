// A `momentkv serve` child process for the server tests: started on a free loopback port (the port
// is read from its "listening on" line), stopped with SIGTERM.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <cstdlib>

#include <filesystem>
#include <string>
#include <vector>

namespace mkv::test {

class ServerProcess {
 public:
  // Runs `momentkv serve --port 0 ARGS`; waits (up to 60 s) until it listens. `env` entries
  // ("NAME=value") are added to the child's environment.
  explicit ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  // The server's resident set size in KiB (VmRSS); -1 when it is not running.
  long rss_kib() const;
  // The server's thread count (/proc Threads); -1 when it is not running.
  long threads() const;
  bool running() const;
  // Sends SIGTERM and waits up to `seconds`; the exit code, or -1 when it had to be killed.
  int stop(double seconds = 20);
  // What the server wrote to stderr so far (after stop(): all of it).
  const std::string& log() const { return log_; }

 private:
  void read_log(double seconds, const std::string& until);
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  int port_ = 0;
  std::string log_;
};

// What the server sent back on a raw connection: every byte until it closed the connection or the
// time ran out.
struct RawReply {
  std::string text;
  bool closed = false;  // the server closed the connection (else the time ran out)
  double seconds = 0;   // until then

  int status() const { return text.size() > 12 ? std::atoi(text.c_str() + 9) : 0; }
  nlohmann::json body() const {
    const std::size_t at = text.find("\r\n\r\n");
    return at == std::string::npos ? nlohmann::json() : nlohmann::json::parse(text.substr(at + 4), nullptr, false);
  }
};

// A new TCP connection to the server on loopback `port` (its descriptor; the caller closes it).
int connect_loopback(int port);

// Sends `request` as it is on a new connection (what the server does not read is dropped: a send
// that fails is not an error) and reads the reply for up to `seconds`.
RawReply raw_exchange(int port, const std::string& request, double seconds = 5);

// The number of HTTP responses in a raw reply.
int responses_in(const std::string& text);

// The repository's trained model (models/stories-needle-2k.gguf).
std::string trained_model_path();

// stdout of a shell command; its wait status in *status.
std::string capture_output(const std::string& command, int* status);

// Where scripts/test.sh installs the npm test clients: $MOMENTKV_NPM_DIR, else
// $XDG_CACHE_HOME/momentkv/npm, else ~/.cache/momentkv/npm (the script's rule).
std::filesystem::path npm_client_dir();

}  // namespace mkv::test
