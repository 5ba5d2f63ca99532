#include "runtime/redis_cache.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/kernel_abi.h"
#include "status_macros.h"

namespace lathe {
namespace {

// Blocks SIGPIPE in this thread while hiredis writes to a socket the
// server may have closed (hiredis writes without MSG_NOSIGNAL), and
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

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

}  // namespace

absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "remote cache URL '", url, "' ", why, " (expected redis://HOST:PORT)"));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "redis://")) {
    return bad(absl::StartsWith(url, "rediss://")
                   ? "asks for TLS, which lathe's client does not speak"
                   : "is not a redis:// URL");
  }
  size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) return bad("has no :PORT");
  absl::string_view host = rest.substr(0, colon);
  absl::string_view port_text = rest.substr(colon + 1);
  if (host.empty()) return bad("has no host");
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!ok) {
      return bad(
          "has a host that is not a name or an IPv4 address "
          "(no user, password, path or IPv6)");
    }
  }
  int port = 0;
  bool digits = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) digits = digits && c >= '0' && c <= '9';
  if (!digits || !absl::SimpleAtoi(port_text, &port) || port < 1 ||
      port > 65535) {
    return bad("has a port that is not a number from 1 to 65535");
  }
  return RedisAddress{std::string(host), port};
}

absl::StatusOr<std::unique_ptr<RedisCache>> RedisCache::Create(
    absl::string_view url, Options options) {
  ASSIGN_OR_RETURN(RedisAddress address, ParseRedisUrl(url));
  return std::unique_ptr<RedisCache>(
      new RedisCache(std::string(url), std::move(address), options));
}

RedisCache::~RedisCache() {
  if (context_ != nullptr) redisFree(context_);
}

std::string RedisCache::RedisKey(absl::string_view key) {
  return absl::StrCat("lathe:", LATHE_KERNEL_ABI_VERSION, ":", key);
}

std::string RedisCache::warning() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warning_;
}

void RedisCache::Fail(absl::string_view what) {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
  failed_ = true;
  warning_ = absl::StrCat("lathe: warning: remote compile cache ", url_, " ",
                          what, "; using the local compile cache only");
  std::fprintf(stderr, "%s\n", warning_.c_str());
}

redisContext* RedisCache::Connection() {
  if (failed_) return nullptr;
  if (context_ != nullptr) return context_;
  context_ = redisConnectWithTimeout(address_.host.c_str(), address_.port,
                                     absl::ToTimeval(options_.connect_timeout));
  if (context_ == nullptr) {
    Fail("cannot be connected to (out of memory)");
    return nullptr;
  }
  if (context_->err != 0) {
    Fail(absl::StrCat("cannot be connected to (", context_->errstr, ")"));
    return nullptr;
  }
  if (redisSetTimeout(context_, absl::ToTimeval(options_.command_timeout)) !=
      REDIS_OK) {
    Fail("refused a command timeout");
    return nullptr;
  }
  return context_;
}

absl::StatusOr<std::optional<CacheHit>> RedisCache::Get(absl::string_view key) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  const std::string redis_key = RedisKey(key);
  // One byte past the cap: a value that fills it is over the cap, and a
  // larger one is never sent whole.
  const std::string last = absl::StrCat(options_.max_entry_bytes);
  const char* argv[] = {"GETRANGE", redis_key.c_str(), "0", last.c_str()};
  const size_t lens[] = {8, redis_key.size(), 1, last.size()};
  std::string entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    redisContext* c = Connection();
    if (c == nullptr) return std::nullopt;
    ScopedNoSigpipe no_sigpipe;
    Reply reply(static_cast<redisReply*>(redisCommandArgv(c, 4, argv, lens)));
    if (reply == nullptr) {
      Fail(absl::StrCat("failed during GETRANGE (", c->errstr, ")"));
      return std::nullopt;
    }
    // An error reply (a value of another type) or an empty string (no such
    // key) is a miss.
    if (reply->type != REDIS_REPLY_STRING) return std::nullopt;
    entry.assign(reply->str, reply->len);
  }
  if (entry.empty() ||
      static_cast<int64_t>(entry.size()) > options_.max_entry_bytes) {
    return std::nullopt;
  }
  absl::StatusOr<std::string> payload = DecodeCacheEntry(key, entry);
  if (!payload.ok()) return std::nullopt;
  return CacheHit{*std::move(payload), name()};
}

absl::Status RedisCache::Put(absl::string_view key, absl::string_view bytes) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  const std::string entry = EncodeCacheEntry(key, bytes);
  if (static_cast<int64_t>(entry.size()) > options_.max_entry_bytes) {
    return CacheEntryTooLarge(name(), static_cast<int64_t>(entry.size()),
                              options_.max_entry_bytes);
  }
  const std::string redis_key = RedisKey(key);
  const char* argv[] = {"SET", redis_key.c_str(), entry.data()};
  const size_t lens[] = {3, redis_key.size(), entry.size()};
  std::lock_guard<std::mutex> lock(mu_);
  redisContext* c = Connection();
  if (c == nullptr) return absl::OkStatus();
  ScopedNoSigpipe no_sigpipe;
  Reply reply(static_cast<redisReply*>(redisCommandArgv(c, 3, argv, lens)));
  if (reply == nullptr) {
    Fail(absl::StrCat("failed during SET (", c->errstr, ")"));
  }
  // An error reply (the server out of memory, a read-only replica) leaves
  // the entry unstored, as a cache may.
  return absl::OkStatus();
}

}  // namespace lathe
