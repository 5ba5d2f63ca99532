#include "runtime/testing/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/file_io.h"

namespace lathe::testing {
namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// A connection to 127.0.0.1:`port`, or null (with `error` set).
Context Connect(int port, absl::Duration timeout, std::string* error) {
  Context c(
      redisConnectWithTimeout("127.0.0.1", port, absl::ToTimeval(timeout)));
  if (c == nullptr || c->err != 0) {
    *error = c == nullptr ? "out of memory" : c->errstr;
    return nullptr;
  }
  redisSetTimeout(c.get(), absl::ToTimeval(timeout));
  return c;
}

// Runs the command `args` on 127.0.0.1:`port`.
absl::StatusOr<Reply> Command(int port, const std::vector<std::string>& args) {
  std::string error;
  Context c = Connect(port, absl::Seconds(5), &error);
  if (c == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("redis-server on port ", port, ": ", error));
  }
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply reply(static_cast<redisReply*>(redisCommandArgv(
      c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
  if (reply == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("redis-server on port ", port, ": ", c->errstr));
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    return absl::InternalError(absl::StrCat(args[0], ": ", reply->str));
  }
  return reply;
}

// A port nothing listens on now (the kernel's pick for a bound socket).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string FindRedisServer() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path == nullptr ? "" : path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/redis-server");
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "/usr/bin/redis-server";
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(
    const std::string& binary) {
  return StartWith(binary, nullptr);
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::StartTls(
    const Tls& tls, const std::string& binary) {
  return StartWith(binary, &tls);
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::StartWith(
    const std::string& binary, const Tls* tls) {
  const std::string program = binary.empty() ? FindRedisServer() : binary;
  if (::access(program.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no redis-server at ", program,
                     ": these tests need a real Redis server; install Debian's "
                     "redis-server package (apt-get install redis-server; "
                     "`bash tools/dev.sh test` installs it)"));
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/redis-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  const std::string log = dir + "/redis.log";
  std::string last_error;
  // A port found free may be taken before the server binds it: try again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int port = FreePort();
    std::vector<std::string> args = {program,
                                     "--port",
                                     absl::StrCat(port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--dir",
                                     dir,
                                     "--logfile",
                                     ""};
    int tls_port = 0;
    if (tls != nullptr) {
      for (int i = 0; i < 10 && (tls_port == 0 || tls_port == port); ++i) {
        tls_port = FreePort();
      }
      for (std::string arg : {std::string("--tls-port"), absl::StrCat(tls_port),
                              std::string("--tls-cert-file"), tls->cert_file,
                              std::string("--tls-key-file"), tls->key_file,
                              std::string("--tls-ca-cert-file"), tls->ca_file,
                              std::string("--tls-auth-clients"),
                              std::string(tls->auth_clients ? "yes" : "no")}) {
        args.push_back(std::move(arg));
      }
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out =
        ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return absl::InternalError(absl::StrCat("cannot write ", log));
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(out);
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    }
    if (pid == 0) {
      // The child: dies with the test process; only async-signal-safe calls.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out);
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    last_error = absl::StrCat("redis-server on port ", port,
                              " did not answer PING within 20 s");
    while (absl::Now() < deadline) {
      int status;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;  // reaped
        absl::StatusOr<std::string> text = ReadFileLimited(log, 1 << 16);
        last_error = absl::StrCat("redis-server exited at start: ",
                                  text.ok() ? *text : "(no log)");
        break;
      }
      std::string error;
      Context c = Connect(port, absl::Milliseconds(200), &error);
      if (c != nullptr) {
        Reply pong(static_cast<redisReply*>(redisCommand(c.get(), "PING")));
        if (pong != nullptr && pong->type == REDIS_REPLY_STATUS &&
            std::string(pong->str) == "PONG") {
          return std::unique_ptr<RedisServer>(
              new RedisServer(pid, port, tls_port, dir));
        }
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  RemoveTree(dir).IgnoreError();
  return absl::UnavailableError(last_error);
}

RedisServer::~RedisServer() {
  Kill();
  RemoveTree(dir_).IgnoreError();
}

std::string RedisServer::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

std::string RedisServer::tls_url() const {
  return absl::StrCat("rediss://127.0.0.1:", tls_port_);
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void RedisServer::Pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::Resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

absl::Status RedisServer::Set(absl::string_view key, absl::string_view value) {
  absl::StatusOr<Reply> reply =
      Command(port_, {"SET", std::string(key), std::string(value)});
  return reply.status();
}

absl::Status RedisServer::Run(const std::vector<std::string>& args) {
  return Command(port_, args).status();
}

absl::StatusOr<std::optional<std::string>> RedisServer::Get(
    absl::string_view key) {
  absl::StatusOr<Reply> reply = Command(port_, {"GET", std::string(key)});
  if (!reply.ok()) return reply.status();
  if ((*reply)->type == REDIS_REPLY_NIL) return std::nullopt;
  return std::string((*reply)->str, (*reply)->len);
}

}  // namespace lathe::testing
