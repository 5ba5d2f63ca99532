// RedisConnection against loopback sockets this test controls: a refused
// connect; a silent peer, whose reads and TLS handshake time out within the
// io timeout; a peer that hangs up, read as "connection closed" and written
// to without SIGPIPE killing the process, plain and over TLS; and
// RedisTlsContext refusing files it cannot use.

#include "runtime/redis_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/testing/test_certs.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::lathe::testing::TestCa;
using ::lathe::testing::TestCert;
using ::testing::HasSubstr;

// A listening loopback socket that accepts nothing by itself.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

RedisConnection::Timeouts Short() {
  RedisConnection::Timeouts t;
  t.connect = absl::Milliseconds(500);
  t.io = absl::Milliseconds(300);
  t.handshake = absl::Seconds(2);
  return t;
}

TEST(RedisConnectionTest, ARefusedConnectSaysSo) {
  Listener listener;
  const int port = listener.port();
  listener.Close();  // nothing listens there now
  EXPECT_THAT(
      RedisConnection::Connect("127.0.0.1", port, nullptr, Short()).status(),
      StatusIs(absl::StatusCode::kUnavailable, "Connection refused"));
  EXPECT_THAT(
      RedisConnection::Connect("no-such-host.invalid", port, nullptr, Short())
          .status(),
      StatusIs(absl::StatusCode::kUnavailable,
               HasSubstr("cannot resolve no-such-host.invalid")));
}

TEST(RedisConnectionTest, ASilentPeerTimesOutWithinTheIoTimeout) {
  Listener listener;  // the kernel completes the connect; nobody answers
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisConnection> c,
      RedisConnection::Connect("127.0.0.1", listener.port(), nullptr, Short()));
  EXPECT_FALSE(c->tls());
  ASSERT_OK(c->Write("PING\r\n", absl::InfiniteFuture()));
  char buf[16];
  absl::Time start = absl::Now();
  EXPECT_THAT(
      c->Read(buf, sizeof(buf), absl::InfiniteFuture()).status(),
      StatusIs(absl::StatusCode::kDeadlineExceeded, "timed out reading"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  // A deadline sooner than the io timeout wins.
  start = absl::Now();
  EXPECT_THAT(
      c->Read(buf, sizeof(buf), absl::Now() + absl::Milliseconds(10)).status(),
      StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(250));

  // A TLS handshake nobody answers.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const RedisTlsContext> tls,
                       RedisTlsContext::Create({}));
  start = absl::Now();
  EXPECT_THAT(
      RedisConnection::Connect("127.0.0.1", listener.port(), tls.get(), Short())
          .status(),
      StatusIs(absl::StatusCode::kUnavailable,
               "TLS handshake failed: timed out in the handshake"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(RedisConnectionTest, APeerThatHangsUpIsAnErrorNotASignal) {
  Listener listener;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<RedisConnection> c,
      RedisConnection::Connect("127.0.0.1", listener.port(), nullptr, Short()));
  const int peer = ::accept(listener.fd(), nullptr, nullptr);
  ASSERT_GE(peer, 0);
  ::close(peer);
  char buf[16];
  EXPECT_THAT(c->Read(buf, sizeof(buf), absl::InfiniteFuture()).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       "connection closed by the server"));
  // Writes to the closed socket fail (EPIPE or a reset); SIGPIPE's default
  // action would end this process.
  const std::string chunk(1 << 20, 'x');
  absl::Status written;
  for (int i = 0; i < 8 && written.ok(); ++i) {
    written = c->Write(chunk, absl::Now() + absl::Seconds(2));
  }
  EXPECT_THAT(written, StatusIs(absl::StatusCode::kUnavailable));
}

TEST(RedisConnectionTest, ATlsPeerThatHangsUpIsAnErrorNotASignal) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<TestCa> ca,
      TestCa::Create(lathe::testing::TestTmpPath("ca"), "test CA"));
  ASSERT_OK_AND_ASSIGN(TestCert cert, ca->Issue("server", "IP:127.0.0.1"));
  SSL_CTX* server_ctx = SSL_CTX_new(TLS_server_method());
  ASSERT_EQ(
      SSL_CTX_use_certificate_chain_file(server_ctx, cert.cert_file.c_str()),
      1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey_file(server_ctx, cert.key_file.c_str(),
                                        SSL_FILETYPE_PEM),
            1);
  Listener listener;
  std::thread server([&] {
    const int fd = ::accept(listener.fd(), nullptr, nullptr);
    if (fd < 0) return;
    SSL* ssl = SSL_new(server_ctx);
    SSL_set_fd(ssl, fd);
    SSL_accept(ssl);  // the handshake, then a hang-up without close_notify
    SSL_free(ssl);
    ::close(fd);
  });
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const RedisTlsContext> tls,
                       RedisTlsContext::Create({ca->cert_file(), "", ""}));
  absl::StatusOr<std::unique_ptr<RedisConnection>> c = RedisConnection::Connect(
      "127.0.0.1", listener.port(), tls.get(), Short());
  server.join();
  SSL_CTX_free(server_ctx);
  ASSERT_OK(c.status());
  EXPECT_TRUE((*c)->tls());
  const std::string chunk(1 << 20, 'x');
  absl::Status written;
  for (int i = 0; i < 8 && written.ok(); ++i) {
    written = (*c)->Write(chunk, absl::Now() + absl::Seconds(2));
  }
  EXPECT_THAT(written, StatusIs(absl::StatusCode::kUnavailable));
}

TEST(RedisTlsContextTest, RefusesFilesItCannotUse) {
  const std::string absent = lathe::testing::TestTmpPath("absent.pem");
  EXPECT_THAT(RedisTlsContext::Create({absent, "", ""}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "TLS CA file '" + absent +
                           "' cannot be read (No such file or directory)"));
  EXPECT_THAT(RedisTlsContext::Create({"", absent, ""}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs both a certificate file and a key")));
  EXPECT_THAT(RedisTlsContext::Create({"", absent, absent}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("TLS certificate file '" + absent +
                                 "' cannot be read")));
}

}  // namespace
}  // namespace lathe
