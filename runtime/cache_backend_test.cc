// The compile cache's key rule and entry format: an entry's exact bytes,
// its round trip, and each way an entry can be damaged, with the message
// that says so.

#include "runtime/cache_backend.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checksum.h"
#include "tools/testing/status_matchers.h"

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
  EXPECT_EQ(EncodeCacheEntry(kKey, "abc"),
            "lathe-cache-entry 1 " + kKey +
                " 3 ba7816bf8f01cfea414140de5dae2223"
                "b00361a396177a9cb410ff61f20015ad\nabc");
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
  version.replace(version.find(" 1 "), 3, " 2 ");
  EXPECT_THAT(decode(version), loss("has format 2, not 1"));
  std::string fields = good;
  fields.replace(fields.find(" 7 "), 3, " seven ");
  EXPECT_THAT(decode(fields), loss("has a malformed header line"));
  EXPECT_THAT(decode("lathe-cache-entry 1 " + kKey + " 7\npayload"),
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
}

}  // namespace
}  // namespace lathe
