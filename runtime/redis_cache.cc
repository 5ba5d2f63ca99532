#include "runtime/redis_cache.h"

#include <hiredis/hiredis.h>

#include <cstdio>
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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/kernel_abi.h"
#include "status_macros.h"

namespace lathe {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};

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
  RedisAddress address;
  if (absl::ConsumePrefix(&rest, "rediss://")) {
    address.tls = true;
  } else if (!absl::ConsumePrefix(&rest, "redis://")) {
    return bad("is not a redis:// URL");
  }
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
  const bool tls_files = !options.tls_ca_file.empty() ||
                         !options.tls_cert_file.empty() ||
                         !options.tls_key_file.empty();
  std::shared_ptr<const RedisTlsContext> tls;
  if (address.tls) {
    absl::StatusOr<std::shared_ptr<const RedisTlsContext>> context =
        RedisTlsContext::Create(
            {options.tls_ca_file, options.tls_cert_file, options.tls_key_file});
    if (!context.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("remote cache ", RedactRedisUrl(url), ": ",
                       context.status().message()));
    }
    tls = *std::move(context);
  } else if (tls_files) {
    return absl::InvalidArgumentError(absl::StrCat(
        "remote cache URL '", RedactRedisUrl(url),
        "' is plaintext but TLS files are given; use rediss:// for TLS"));
  }
  return std::unique_ptr<RedisCache>(new RedisCache(
      RedactRedisUrl(url), std::move(address), std::move(options), tls));
}

RedisCache::~RedisCache() = default;

std::string RedisCache::RedisKey(absl::string_view key) {
  return absl::StrCat("lathe:", LATHE_KERNEL_ABI_VERSION, ":", key);
}

std::string RedisCache::warning() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warning_;
}

void RedisCache::Fail(absl::string_view what) {
  connection_.reset();
  failed_ = true;
  warning_ = absl::StrCat("lathe: warning: remote compile cache ", url_, " ",
                          what, "; using the local compile cache only");
  std::fprintf(stderr, "%s\n", warning_.c_str());
}

RedisConnection* RedisCache::Connection() {
  if (failed_) return nullptr;
  if (connection_ != nullptr) return connection_.get();
  RedisConnection::Timeouts timeouts;
  timeouts.connect = options_.connect_timeout;
  timeouts.io = options_.command_timeout;
  timeouts.handshake = options_.transfer_timeout;
  absl::StatusOr<std::unique_ptr<RedisConnection>> connection =
      RedisConnection::Connect(address_.host, address_.port, tls_.get(),
                               timeouts);
  if (!connection.ok()) {
    Fail(absl::StrCat("cannot be connected to (", connection.status().message(),
                      ")"));
    return nullptr;
  }
  connection_ = *std::move(connection);
  if (!address_.password.empty()) {
    // AUTH PASSWORD (requirepass) or AUTH USER PASSWORD (an ACL user).
    const bool user = !address_.user.empty();
    const char* argv[] = {
        "AUTH", user ? address_.user.c_str() : address_.password.c_str(),
        address_.password.c_str()};
    const size_t lens[] = {
        4, user ? address_.user.size() : address_.password.size(),
        address_.password.size()};
    Reply reply(Run(connection_.get(), user ? 3 : 2, argv, lens, "AUTH"));
    if (reply == nullptr) return nullptr;
    if (reply->type == REDIS_REPLY_ERROR) {
      Fail(absl::StrCat("refused the credentials of user '",
                        user ? address_.user : "default", "' (",
                        absl::string_view(reply->str, reply->len), ")"));
      return nullptr;
    }
  }
  return connection_.get();
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

redisReply* RedisCache::Run(RedisConnection* c, int argc, const char** argv,
                            const size_t* lens, absl::string_view what) {
  const absl::Time deadline = absl::Now() + options_.transfer_timeout;
  auto failed = [&](absl::string_view why) {
    Fail(absl::StrCat("failed during ", what, " (", why, ")"));
    return nullptr;
  };
  char* command = nullptr;
  const int length = redisFormatCommandArgv(&command, argc, argv, lens);
  if (length < 0) return failed("out of memory");
  const absl::Status written =
      c->Write(absl::string_view(command, length), deadline);
  redisFreeCommand(command);
  if (!written.ok()) return failed(written.message());
  // A reader per command: one command is in flight at a time. The reply's
  // header line is looked at in the reader's unparsed bytes before the
  // reader parses it, so an announced size over the cap is never waited
  // for, let alone buffered.
  std::unique_ptr<redisReader, ReaderDeleter> reader(redisReaderCreate());
  if (reader == nullptr) return failed("out of memory");
  redisReader* r = reader.get();
  bool header_checked = false;
  char buf[16 * 1024];
  while (true) {
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
    const absl::StatusOr<size_t> n = c->Read(buf, sizeof(buf), deadline);
    if (!n.ok() && absl::Now() >= deadline) {
      return failed(
          absl::StrCat("no whole reply within ",
                       absl::FormatDuration(options_.transfer_timeout)));
    }
    if (!n.ok()) return failed(n.status().message());
    if (redisReaderFeed(r, buf, *n) != REDIS_OK) {
      return failed(absl::StrCat("malformed reply: ", r->errstr));
    }
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
    RedisConnection* c = Connection();
    if (c == nullptr) return std::nullopt;
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
  RedisConnection* c = Connection();
  if (c == nullptr) return absl::OkStatus();
  Reply reply(Run(c, 3, argv, lens, "SET"));
  if (reply != nullptr) Refused(reply.get(), "SET");
  // Another error reply (the server out of memory, a read-only replica)
  // leaves the entry unstored, as a cache may.
  return absl::OkStatus();
}

}  // namespace lathe
