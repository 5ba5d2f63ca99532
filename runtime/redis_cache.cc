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
#include "absl/strings/escaping.h"
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

namespace {

// The longest reply line (status, error, integer or bulk length) read.
constexpr size_t kMaxReplyLine = 4096;

// `text` with its %XX escapes decoded; false for a malformed escape.
bool PercentDecode(absl::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out->push_back(text[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size()) return false;
    for (int k = 1; k <= 2; ++k) {
      char c = text[i + k];
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0) return false;
      value = value * 16 + digit;
    }
    out->push_back(static_cast<char>(value));
    i += 2;
  }
  return true;
}

// Whether `pending`, the start of a reply not yet parsed, has a header line
// within bounds: true once it does, false while more bytes are needed, an
// error saying what is out of bounds otherwise.
absl::StatusOr<bool> CheckReplyHeader(absl::string_view pending,
                                      int64_t max_bulk) {
  size_t eol = pending.substr(0, kMaxReplyLine).find("\r\n");
  if (eol == absl::string_view::npos) {
    if (pending.size() < kMaxReplyLine) return false;
    return absl::ResourceExhaustedError(
        absl::StrCat("sent a reply line over ", kMaxReplyLine, " bytes"));
  }
  int64_t size = 0;
  switch (pending[0]) {
    case '+':
    case '-':
    case ':':
      return true;
    case '$':
      if (!absl::SimpleAtoi(pending.substr(1, eol - 1), &size) || size < -1) {
        return absl::DataLossError("sent a malformed bulk reply header");
      }
      if (size > max_bulk) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "answered with a value of ", size, " bytes, over the cap of ",
            max_bulk, " (refused unread)"));
      }
      return true;
    default:
      return absl::DataLossError(
          absl::StrCat("sent a reply of unexpected type '",
                       absl::CEscape(pending.substr(0, 1)), "'"));
  }
}

}  // namespace

std::string RedactRedisUrl(absl::string_view url) {
  size_t scheme = url.find("://");
  size_t at = url.rfind('@');
  if (scheme == absl::string_view::npos || at == absl::string_view::npos ||
      at < scheme) {
    return std::string(url);
  }
  absl::string_view userinfo = url.substr(scheme + 3, at - scheme - 3);
  size_t colon = userinfo.find(':');
  if (colon == absl::string_view::npos) return std::string(url);
  return absl::StrCat(url.substr(0, scheme + 3), userinfo.substr(0, colon),
                      ":***", url.substr(at));
}

absl::StatusOr<RedisAddress> ParseRedisUrl(absl::string_view url) {
  const std::string shown = RedactRedisUrl(url);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("remote cache URL '", shown, "' ", why,
                     " (expected redis://[USER:PASSWORD@]HOST:PORT)"));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "redis://")) {
    return bad(absl::StartsWith(url, "rediss://")
                   ? absl::StrCat("asks for TLS, which this build's hiredis (",
                                  HIREDIS_MAJOR, ".", HIREDIS_MINOR,
                                  ") does not have; use redis:// over a "
                                  "trusted network or a TLS tunnel")
                   : "is not a redis:// URL");
  }
  RedisAddress address;
  size_t at = rest.rfind('@');
  if (at != absl::string_view::npos) {
    absl::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    if (colon == absl::string_view::npos) {
      return bad("names a user without a password (USER:PASSWORD@)");
    }
    if (!PercentDecode(userinfo.substr(0, colon), &address.user) ||
        !PercentDecode(userinfo.substr(colon + 1), &address.password)) {
      return bad("has a malformed %XX escape in its user or password");
    }
    if (address.password.empty()) return bad("has an empty password");
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
          "(no path or IPv6)");
    }
  }
  int port = 0;
  bool digits = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) digits = digits && c >= '0' && c <= '9';
  if (!digits || !absl::SimpleAtoi(port_text, &port) || port < 1 ||
      port > 65535) {
    return bad("has a port that is not a number from 1 to 65535");
  }
  address.host = std::string(host);
  address.port = port;
  return address;
}

absl::StatusOr<std::unique_ptr<RedisCache>> RedisCache::Create(
    absl::string_view url, Options options) {
  ASSIGN_OR_RETURN(RedisAddress address, ParseRedisUrl(url));
  return std::unique_ptr<RedisCache>(new RedisCache(
      RedactRedisUrl(url), std::move(address), std::move(options)));
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
  if (!address_.password.empty()) {
    // AUTH PASSWORD (requirepass) or AUTH USER PASSWORD (an ACL user).
    const bool user = !address_.user.empty();
    const char* argv[] = {
        "AUTH", user ? address_.user.c_str() : address_.password.c_str(),
        address_.password.c_str()};
    const size_t lens[] = {
        4, user ? address_.user.size() : address_.password.size(),
        address_.password.size()};
    ScopedNoSigpipe no_sigpipe;
    Reply reply(Run(context_, user ? 3 : 2, argv, lens, "AUTH"));
    if (reply == nullptr) return nullptr;
    if (reply->type == REDIS_REPLY_ERROR) {
      Fail(absl::StrCat("refused the credentials of user '",
                        user ? address_.user : "default", "' (",
                        absl::string_view(reply->str, reply->len), ")"));
      return nullptr;
    }
  }
  return context_;
}

bool RedisCache::Refused(const redisReply* reply, absl::string_view what) {
  if (reply->type != REDIS_REPLY_ERROR) return false;
  absl::string_view error(reply->str, reply->len);
  if (!absl::StartsWith(error, "NOAUTH") &&
      !absl::StartsWith(error, "NOPERM")) {
    return false;
  }
  Fail(absl::StrCat("refused ", what, " (", error,
                    "; give credentials as redis://USER:PASSWORD@HOST:PORT)"));
  return true;
}

redisReply* RedisCache::Run(redisContext* c, int argc, const char** argv,
                            const size_t* lens, absl::string_view what) {
  const absl::Time deadline = absl::Now() + options_.transfer_timeout;
  auto failed = [&](absl::string_view why) {
    Fail(absl::StrCat("failed during ", what, " (", why, ")"));
    return nullptr;
  };
  if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) {
    return failed(c->errstr);
  }
  for (int done = 0; !done;) {
    if (redisBufferWrite(c, &done) != REDIS_OK) return failed(c->errstr);
    if (!done && absl::Now() > deadline) return failed("timed out writing");
  }
  // The reply's header line is looked at in the reader's unparsed bytes
  // before the reader sees it, so an announced size over the cap is never
  // waited for, let alone buffered.
  bool header_checked = false;
  while (true) {
    redisReader* r = c->reader;
    if (!header_checked && r->len > r->pos) {
      absl::StatusOr<bool> ok =
          CheckReplyHeader(absl::string_view(r->buf + r->pos, r->len - r->pos),
                           options_.max_entry_bytes + 1);
      if (!ok.ok()) {
        Fail(absl::StrCat("refused the reply to ", what, ": it ",
                          ok.status().message()));
        return nullptr;
      }
      header_checked = *ok;
    }
    if (header_checked) {
      void* reply = nullptr;
      if (redisReaderGetReply(r, &reply) != REDIS_OK) {
        return failed(absl::StrCat("malformed reply: ", r->errstr));
      }
      if (reply != nullptr) return static_cast<redisReply*>(reply);
    }
    if (absl::Now() > deadline) {
      return failed(
          absl::StrCat("no whole reply within ",
                       absl::FormatDuration(options_.transfer_timeout)));
    }
    if (redisBufferRead(c) != REDIS_OK) return failed(c->errstr);
  }
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
    Reply reply(Run(c, 4, argv, lens, "GETRANGE"));
    if (reply == nullptr || Refused(reply.get(), "GETRANGE")) {
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
  std::optional<std::string> payload = codec_.Decode(key, entry);
  if (!payload) return std::nullopt;
  return CacheHit{*std::move(payload), name()};
}

absl::Status RedisCache::Put(absl::string_view key, absl::string_view bytes) {
  RETURN_IF_ERROR(ValidateCacheKey(key));
  const std::string entry = codec_.Encode(key, bytes);
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
  Reply reply(Run(c, 3, argv, lens, "SET"));
  if (reply != nullptr) Refused(reply.get(), "SET");
  // Another error reply (the server out of memory, a read-only replica)
  // leaves the entry unstored, as a cache may.
  return absl::OkStatus();
}

}  // namespace lathe
