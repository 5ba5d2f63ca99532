// The compile cache's key rule and entry format: an entry's exact bytes,
// its round trip, each way an entry can be damaged, with the message that
// says so, and, under a fleet secret, each way an entry can lack its HMAC.

#include "runtime/cache_backend.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checksum.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

const std::string kKey(64, 'a');
const std::string kOtherKey(64, 'b');

TEST(ValidateCacheKeyTest, AcceptsASha256) {
  EXPECT_OK(ValidateCacheKey(Sha256Hex("x")));
  EXPECT_OK(ValidateCacheKey(kKey));
}

TEST(ValidateCacheKeyTest, RefusesPathsUppercaseAndOtherLengths) {
  for (const std::string& key :
       {std::string("../../etc/passwd"), std::string(63, 'a'),
        std::string(65, 'a'), std::string(64, 'A'), std::string(),
        std::string(63, 'a') + "/"}) {
    EXPECT_THAT(ValidateCacheKey(key),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is not 64 lowercase hex digits")))
        << key;
  }
  EXPECT_THAT(ValidateCacheKey("../x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("compile cache key '../x'")));
}

TEST(CacheEntryTest, HasTheDocumentedBytes) {
  // sha256("abc") is FIPS 180-2's first example.
  const std::string header = "lathe-cache-entry 2 " + kKey +
                             " 3 ba7816bf8f01cfea414140de5dae2223"
                             "b00361a396177a9cb410ff61f20015ad";
  EXPECT_EQ(EncodeCacheEntry(kKey, "abc"), header + " -\nabc");
  EXPECT_EQ(EncodeCacheEntry(kKey, "abc", "fleet"),
            header + " " + HmacSha256Hex("fleet", header) + "\nabc");
}

TEST(CacheEntryTest, RoundTripsAnyBytes) {
  std::string payload(
      "\x7f"
      "ELF\0\n\n\xff",
      8);
  ASSERT_OK_AND_ASSIGN(std::string back,
                       DecodeCacheEntry(kKey, EncodeCacheEntry(kKey, payload)));
  EXPECT_EQ(back, payload);
  ASSERT_OK_AND_ASSIGN(back,
                       DecodeCacheEntry(kKey, EncodeCacheEntry(kKey, "")));
  EXPECT_EQ(back, "");
}

TEST(CacheEntryTest, EachDamageIsDataLossSayingWhat) {
  const std::string good = EncodeCacheEntry(kKey, "payload");
  auto decode = [&](const std::string& entry) {
    return DecodeCacheEntry(kKey, entry);
  };
  auto loss = [](const std::string& what) {
    return StatusIs(absl::StatusCode::kDataLoss,
                    HasSubstr("compile cache entry " + what));
  };
  EXPECT_THAT(decode(""), loss("has no header line"));
  EXPECT_THAT(decode(std::string(300, 'x') + "\n"), loss("has no header line"));
  std::string magic = good;
  magic[0] = 'L';
  EXPECT_THAT(decode(magic), loss("does not start with lathe-cache-entry"));
  std::string version = good;
  version.replace(version.find(" 2 "), 3, " 1 ");
  EXPECT_THAT(decode(version), loss("has format 1, not 2"));
  std::string fields = good;
  fields.replace(fields.find(" 7 "), 3, " seven ");
  EXPECT_THAT(decode(fields), loss("has a malformed header line"));
  EXPECT_THAT(decode("lathe-cache-entry 2 " + kKey + " 7\npayload"),
              loss("has a malformed header line"));
  EXPECT_THAT(decode("lathe-cache-entry\npayload"),
              loss("has a malformed header line"));
  EXPECT_THAT(DecodeCacheEntry(kOtherKey, good),
              loss("is for key " + kKey + ", not " + kOtherKey));
  EXPECT_THAT(decode(good.substr(0, good.size() - 1)),
              loss("holds 6 payload bytes, its header says 7"));
  EXPECT_THAT(decode(good + "!"),
              loss("holds 8 payload bytes, its header says 7"));
  std::string flipped = good;
  flipped.back() ^= 1;
  EXPECT_THAT(decode(flipped), loss("payload does not match its SHA-256"));
  // Damage is damage under a secret too (the HMAC is looked at last).
  EXPECT_THAT(DecodeCacheEntry(kKey, flipped, "fleet"),
              loss("payload does not match its SHA-256"));
}

TEST(CacheEntryTest, UnderASecretOnlyItsHmacIsTrusted) {
  const std::string signed_entry = EncodeCacheEntry(kKey, "payload", "fleet");
  ASSERT_OK_AND_ASSIGN(std::string back,
                       DecodeCacheEntry(kKey, signed_entry, "fleet"));
  EXPECT_EQ(back, "payload");
  // Without a secret the HMAC is not looked at: the remote tier is trusted.
  ASSERT_OK_AND_ASSIGN(back, DecodeCacheEntry(kKey, signed_entry));
  EXPECT_EQ(back, "payload");
  auto untrusted = [](const std::string& what) {
    return StatusIs(absl::StatusCode::kPermissionDenied,
                    HasSubstr("compile cache entry" + what));
  };
  // A well-formed entry written by hand, without the secret.
  EXPECT_THAT(
      DecodeCacheEntry(kKey, EncodeCacheEntry(kKey, "payload"), "fleet"),
      untrusted(" has no HMAC, and a cache secret is set"));
  EXPECT_THAT(DecodeCacheEntry(kKey, EncodeCacheEntry(kKey, "payload", "other"),
                               "fleet"),
              untrusted("'s HMAC is not the cache secret's"));
  // A payload swapped with its SHA-256 but the old HMAC kept.
  std::string swapped = EncodeCacheEntry(kKey, "evil!!!", "other");
  const std::string hmac = HmacSha256Hex(
      "fleet", signed_entry.substr(0, signed_entry.find('\n') - 65));
  swapped.replace(swapped.find('\n') - 64, 64, hmac);
  EXPECT_THAT(DecodeCacheEntry(kKey, swapped, "fleet"),
              untrusted("'s HMAC is not the cache secret's"));
  std::string short_mac = signed_entry;
  short_mac.erase(short_mac.find('\n') - 1, 1);
  EXPECT_THAT(DecodeCacheEntry(kKey, short_mac, "fleet"),
              untrusted("'s HMAC is not the cache secret's"));
}

TEST(CacheEntryCodecTest, CountsUntrustedEntriesAndWarnsOnce) {
  CacheEntryCodec codec("disk compile cache /c", "fleet");
  EXPECT_TRUE(codec.signs());
  EXPECT_EQ(codec.Decode(kKey, codec.Encode(kKey, "so")), "so");
  // Damage is a silent miss, not an untrusted entry.
  EXPECT_EQ(codec.Decode(kKey, "garbage"), std::nullopt);
  EXPECT_EQ(codec.untrusted(), 0);
  EXPECT_EQ(codec.warning(), "");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(codec.Decode(kKey, EncodeCacheEntry(kKey, "so")), std::nullopt);
  EXPECT_EQ(codec.Decode(kKey, EncodeCacheEntry(kKey, "so", "x")),
            std::nullopt);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(codec.untrusted(), 2);
  EXPECT_EQ(err, codec.warning() + "\n");
  EXPECT_EQ(codec.warning(),
            "lathe: warning: disk compile cache /c: refused an entry: "
            "compile cache entry has no HMAC, and a cache secret is set (not "
            "written by a holder of LATHE_CACHE_SECRET; compiling instead)");
  CacheEntryCodec open_codec("x", "");
  EXPECT_FALSE(open_codec.signs());
  EXPECT_EQ(open_codec.Decode(kKey, EncodeCacheEntry(kKey, "so", "x")), "so");
}

}  // namespace
}  // namespace lathe
