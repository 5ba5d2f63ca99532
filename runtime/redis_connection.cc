#include "runtime/redis_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "status_macros.h"

namespace lathe {
namespace {

// Blocks SIGPIPE in this thread while OpenSSL writes to a socket the
// server may have closed (its socket BIO writes without MSG_NOSIGNAL), and
// swallows the one such a write raised.
class ScopedNoSigpipe {
 public:
  ScopedNoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~ScopedNoSigpipe() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero = {0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

// Waits until `fd` has `events` (POLLIN, POLLOUT), at most until `until`.
absl::Status WaitFor(int fd, short events, absl::Time until,
                     absl::string_view what) {
  while (true) {
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("timed out ", what));
    }
    pollfd p = {fd, events, 0};
    const int ms = static_cast<int>(
        absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return absl::OkStatus();  // ready, or an error to read
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(
          absl::StrCat("poll: ", std::strerror(errno)));
    }
  }
}

// The reason of OpenSSL's most recent error on this thread, or `fallback`.
std::string OpenSslReason(absl::string_view fallback) {
  const unsigned long error = ERR_peek_last_error();
  ERR_clear_error();
  if (error == 0) return std::string(fallback);
  const char* reason = ERR_reason_error_string(error);
  if (reason != nullptr) return reason;
  char buf[256];
  ERR_error_string_n(error, buf, sizeof(buf));
  return buf;
}

// Whether `path` can be opened for reading; an InvalidArgument error
// naming it (`what`) otherwise.
absl::Status Readable(const std::string& path, absl::string_view what) {
  if (::access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("TLS ", what, " '", path,
                                                 "' cannot be read (",
                                                 std::strerror(errno), ")"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const RedisTlsContext>> RedisTlsContext::Create(
    const RedisTlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS client certificate needs both a certificate file and a key "
        "file");
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("cannot make a TLS context (",
                                            OpenSslReason("unknown"), ")"));
  }
  std::shared_ptr<const RedisTlsContext> context(new RedisTlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  auto failed = [](absl::string_view what, const std::string& path) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS ", what, " '", path, "' cannot be loaded (",
                     OpenSslReason("unknown"), ")"));
  };
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return failed("system trust store", "default");
    }
  } else {
    RETURN_IF_ERROR(Readable(options.ca_file, "CA file"));
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) !=
        1) {
      return failed("CA file", options.ca_file);
    }
  }
  if (!options.cert_file.empty()) {
    RETURN_IF_ERROR(Readable(options.cert_file, "certificate file"));
    RETURN_IF_ERROR(Readable(options.key_file, "key file"));
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) !=
        1) {
      return failed("certificate file", options.cert_file);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(),
                                    SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      return failed("key file", options.key_file);
    }
  }
  return context;
}

RedisTlsContext::~RedisTlsContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const std::string& host, int port, const RedisTlsContext* tls,
    const Timeouts& timeouts) {
  const absl::Time connect_deadline = absl::Now() + timeouts.connect;
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (gai != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", ::gai_strerror(gai)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found,
                                                           ::freeaddrinfo);
  std::string error = "no address";
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int result = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (result != 0 && errno == EINPROGRESS) {
      absl::Status ready =
          WaitFor(fd, POLLOUT, connect_deadline,
                  absl::StrCat("connecting after ",
                               absl::FormatDuration(timeouts.connect)));
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      if (!ready.ok()) {
        error = std::string(ready.message());
      } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 &&
                 so_error == 0) {
        result = 0;
      } else {
        error = std::strerror(so_error != 0 ? so_error : errno);
      }
    } else if (result != 0) {
      error = std::strerror(errno);
    }
    if (result != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) return absl::UnavailableError(error);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::unique_ptr<RedisConnection> connection(
      new RedisConnection(fd, timeouts.io));
  if (tls != nullptr) {
    absl::Status handshake =
        connection->Handshake(*tls, host, absl::Now() + timeouts.handshake);
    if (!handshake.ok()) {
      return absl::UnavailableError(
          absl::StrCat("TLS handshake failed: ", handshake.message()));
    }
  }
  return connection;
}

RedisConnection::~RedisConnection() {
  // No close_notify: it would be one more write to a server that may be
  // gone, and Redis does not need it.
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

template <typename Op>
absl::StatusOr<int> RedisConnection::SslCall(Op op, absl::string_view what,
                                             absl::Time deadline) {
  ScopedNoSigpipe no_sigpipe;
  while (true) {
    ERR_clear_error();
    errno = 0;
    const int result = op();
    if (result > 0) return result;
    const int error = SSL_get_error(ssl_, result);
    const absl::Time until = std::min(absl::Now() + io_timeout_, deadline);
    switch (error) {
      case SSL_ERROR_WANT_READ:
        RETURN_IF_ERROR(WaitFor(fd_, POLLIN, until, what));
        break;
      case SSL_ERROR_WANT_WRITE:
        RETURN_IF_ERROR(WaitFor(fd_, POLLOUT, until, what));
        break;
      case SSL_ERROR_ZERO_RETURN:
        return absl::UnavailableError("connection closed by the server");
      case SSL_ERROR_SYSCALL:
        if (ERR_peek_last_error() == 0) {
          return absl::UnavailableError(errno == 0
                                            ? "connection closed by the server"
                                            : std::strerror(errno));
        }
        [[fallthrough]];
      default: {
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK) {
          ERR_clear_error();
          return absl::UnavailableError(
              absl::StrCat("certificate verify failed: ",
                           X509_verify_cert_error_string(verify)));
        }
        return absl::UnavailableError(
            OpenSslReason("connection closed by the server"));
      }
    }
  }
}

absl::Status RedisConnection::Handshake(const RedisTlsContext& tls,
                                        const std::string& host,
                                        absl::Time deadline) {
  ssl_ = SSL_new(tls.ctx());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    return absl::InternalError(OpenSslReason("cannot make a TLS session"));
  }
  in_addr ip;
  if (::inet_pton(AF_INET, host.c_str(), &ip) == 1) {
    // An IPv4 literal: matched against the certificate's IP addresses (and
    // no SNI, which names hosts only).
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) !=
        1) {
      return absl::InternalError(OpenSslReason("cannot check the address"));
    }
  } else if (SSL_set_tlsext_host_name(ssl_, host.c_str()) != 1 ||
             SSL_set1_host(ssl_, host.c_str()) != 1) {
    return absl::InternalError(OpenSslReason("cannot check the host name"));
  }
  return SslCall([this] { return SSL_connect(ssl_); }, "in the handshake",
                 deadline)
      .status();
}

absl::Status RedisConnection::Write(absl::string_view bytes,
                                    absl::Time deadline) {
  while (!bytes.empty()) {
    // Pieces a TLS write may retry unchanged (and an int can count).
    const size_t piece = std::min<size_t>(bytes.size(), 1 << 20);
    if (ssl_ != nullptr) {
      ASSIGN_OR_RETURN(
          int n, SslCall([&] { return SSL_write(ssl_, bytes.data(), piece); },
                         "writing", deadline));
      bytes.remove_prefix(n);
      continue;
    }
    const ssize_t n = ::send(fd_, bytes.data(), piece, MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RETURN_IF_ERROR(WaitFor(fd_, POLLOUT,
                              std::min(absl::Now() + io_timeout_, deadline),
                              "writing"));
    } else if (errno != EINTR) {
      return absl::UnavailableError(std::strerror(errno));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RedisConnection::Read(char* buf, size_t size,
                                             absl::Time deadline) {
  const int piece = static_cast<int>(std::min<size_t>(size, 1 << 20));
  if (ssl_ != nullptr) {
    ASSIGN_OR_RETURN(int n, SslCall([&] { return SSL_read(ssl_, buf, piece); },
                                    "reading", deadline));
    return static_cast<size_t>(n);
  }
  while (true) {
    const ssize_t n = ::recv(fd_, buf, piece, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) {
      return absl::UnavailableError("connection closed by the server");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RETURN_IF_ERROR(WaitFor(fd_, POLLIN,
                              std::min(absl::Now() + io_timeout_, deadline),
                              "reading"));
    } else if (errno != EINTR) {
      return absl::UnavailableError(std::strerror(errno));
    }
  }
}

}  // namespace lathe
