// -----------------------------------------------------------------------------
// File: redis_server.h
// -----------------------------------------------------------------------------
//
// A real redis-server (Debian's package) for tests and benchmarks: started
// as a child process on a free loopback port (127.0.0.1 only, nothing
// saved to disk), ready once it answers PING, killed and reaped by the
// destructor (and by the kernel if the test process dies first). A
// machine without redis-server gets an error that says how to install it,
// never a silent skip. StartTls adds a TLS port (rediss://) with the
// certificate files a test made (runtime/testing/test_certs.h); the plain
// port stays, for the test's own raw commands.
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

  // redis-server's TLS settings (--tls-cert-file, --tls-key-file,
  // --tls-ca-cert-file, --tls-auth-clients).
  struct Tls {
    std::string cert_file;
    std::string key_file;
    std::string ca_file;        // the CAs of client certificates
    bool auth_clients = false;  // whether clients must show a certificate
  };

  // StartTls()
  //
  // As Start, with a TLS port too (tls_port(), tls_url()).
  static absl::StatusOr<std::unique_ptr<RedisServer>> StartTls(
      const Tls& tls, const std::string& binary = "");

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // "redis://127.0.0.1:PORT".
  std::string url() const;
  // The TLS port (0 without one) and "rediss://127.0.0.1:TLS_PORT".
  int tls_port() const { return tls_port_; }
  std::string tls_url() const;

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
  RedisServer(pid_t pid, int port, int tls_port, std::string dir)
      : pid_(pid), port_(port), tls_port_(tls_port), dir_(std::move(dir)) {}

  // Start's and StartTls's work; `tls` null for no TLS port.
  static absl::StatusOr<std::unique_ptr<RedisServer>> StartWith(
      const std::string& binary, const Tls* tls);

  pid_t pid_;
  int port_;
  int tls_port_;
  std::string dir_;  // its working directory and log
};

}  // namespace lathe::testing

#endif  // LATHE_RUNTIME_TESTING_REDIS_SERVER_H_
