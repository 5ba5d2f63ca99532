// -----------------------------------------------------------------------------
// File: redis_server.h
// -----------------------------------------------------------------------------
//
// A real redis-server (Debian's package) for tests and benchmarks: started
// as a child process on a free loopback port (127.0.0.1 only, nothing
// saved to disk), ready once it answers PING, killed and reaped by the
// destructor (and by the kernel if the test process dies first). A
// machine without redis-server gets an error that says how to install it,
// never a silent skip.
//
// Example:
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> redis,
//                        RedisServer::Start());
//   RedisCache::Create(redis->url());   // "redis://127.0.0.1:PORT"
//   redis->Kill();                      // the server dies mid-run

#ifndef LATHE_RUNTIME_TESTING_REDIS_SERVER_H_
#define LATHE_RUNTIME_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::testing {

class RedisServer {
 public:
  // Start()
  //
  // Starts `binary` (default: redis-server on $PATH, else
  // /usr/bin/redis-server) and waits until it answers PING; an error
  // naming the package to install when there is no such program, or
  // carrying the server's log when it does not come up.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary = "");

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // "redis://127.0.0.1:PORT".
  std::string url() const;

  // Kill()
  //
  // SIGKILL and reap: the server is gone, its connections reset.
  void Kill();

  // Pause() / Resume()
  //
  // SIGSTOP / SIGCONT: while paused the kernel still accepts connections
  // but no command is answered (a hung server).
  void Pause();
  void Resume();

  // Set() / Get()
  //
  // Raw SET and GET of `key` on the server, bypassing lathe's cache (to
  // plant a corrupt value or look at a stored one); Get is nullopt when
  // the key is absent.
  absl::Status Set(absl::string_view key, absl::string_view value);
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);

  // Run()
  //
  // Any command, sent as the default user with no AUTH (ACL SETUSER to add
  // a user, CONFIG SET requirepass); an error carrying the server's error
  // reply.
  absl::Status Run(const std::vector<std::string>& args);

 private:
  RedisServer(pid_t pid, int port, std::string dir)
      : pid_(pid), port_(port), dir_(std::move(dir)) {}

  pid_t pid_;
  int port_;
  std::string dir_;  // its working directory and log
};

}  // namespace lathe::testing

#endif  // LATHE_RUNTIME_TESTING_REDIS_SERVER_H_
