#include "runtime/testing/lying_redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "runtime/cache_backend.h"
#include "runtime/checksum.h"

namespace lathe::testing {

LyingRedisServer::LyingRedisServer(Reply reply) : reply_(std::move(reply)) {
  if (!reply_.tls_cert_file.empty()) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    EXPECT_EQ(
        SSL_CTX_use_certificate_chain_file(ctx_, reply_.tls_cert_file.c_str()),
        1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, reply_.tls_key_file.c_str(),
                                          SSL_FILETYPE_PEM),
              1);
  }
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  EXPECT_EQ(::listen(listener_, 1), 0);
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] {
    int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    int small = 64 << 10;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    SSL* ssl = nullptr;
    char buf[4096];
    bool ready;
    if (ctx_ != nullptr) {
      ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      ready = SSL_accept(ssl) == 1 && SSL_read(ssl, buf, sizeof(buf)) > 0;
    } else {
      ready = ::recv(fd, buf, sizeof(buf), 0) > 0;  // the command
    }
    if (ready) {
      const std::string header = absl::StrCat("$", reply_.announced, "\r\n");
      Send(fd, ssl, header.data(), static_cast<int64_t>(header.size()));
      const std::string bytes(reply_.chunk, 'x');
      while (sent_ < reply_.stream) {
        int64_t n = Send(fd, ssl, bytes.data(), reply_.chunk);
        if (n <= 0) break;
        sent_ += n;
        absl::SleepFor(reply_.pause);
      }
      // Holds the connection until the client goes.
      while ((ssl != nullptr ? SSL_read(ssl, buf, sizeof(buf))
                             : ::recv(fd, buf, sizeof(buf), 0)) > 0) {
      }
    }
    if (ssl != nullptr) SSL_free(ssl);
    ::close(fd);
  });
}

LyingRedisServer::~LyingRedisServer() {
  ::shutdown(listener_, SHUT_RDWR);
  thread_.join();
  ::close(listener_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

int64_t LyingRedisServer::Send(int fd, SSL* ssl, const char* data, int64_t n) {
  if (ssl != nullptr) return SSL_write(ssl, data, static_cast<int>(n));
  return ::send(fd, data, n, MSG_NOSIGNAL);
}

std::string LyingRedisServer::url() const {
  return absl::StrCat(ctx_ != nullptr ? "rediss" : "redis",
                      "://127.0.0.1:", port_);
}

void ExpectAReplyOverTheCapIsRefusedUnread(
    const RedisCache::Options& options,
    const LyingRedisServer::Reply& transport) {
  // SIGPIPE from the server thread's TLS writes once the client has gone.
  ::signal(SIGPIPE, SIG_IGN);
  LyingRedisServer::Reply reply = transport;
  reply.announced = 3000000000;
  reply.stream = int64_t{256} << 20;
  LyingRedisServer server(reply);
  std::unique_ptr<RedisCache> cache;
  {
    absl::StatusOr<std::unique_ptr<RedisCache>> made =
        RedisCache::Create(server.url(), options);
    ASSERT_TRUE(made.ok()) << made.status();
    cache = *std::move(made);
    ::testing::internal::CaptureStderr();
    const absl::Time start = absl::Now();
    absl::StatusOr<std::optional<CacheHit>> hit = cache->Get(Sha256Hex("key"));
    ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(hit.ok()) << hit.status();
    EXPECT_FALSE(hit->has_value());  // a miss
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
    EXPECT_EQ(cache->warning(),
              "lathe: warning: remote compile cache " + server.url() +
                  " refused the reply to GETRANGE: it answered with a value "
                  "of 3000000000 bytes, over the cap of 67108865 (refused "
                  "unread); using the local compile cache only");
  }
  cache.reset();  // the connection closes; the server stops
  // What the kernel's socket buffers took, at most: nowhere near 256 MB.
  EXPECT_LT(server.sent(), int64_t{32} << 20);
}

}  // namespace lathe::testing
