#include "tools/trace/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace lathe::trace {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

TEST(JsonQuoteTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(JsonQuote("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f\0z", 5)),
            "\"\\u0001\\u001f\\u007f\\u0000z\"");
}

TEST(JsonQuoteTest, KeepsValidUtf8) {
  // 2-, 3- and 4-byte sequences: é, €, 𝄞.
  EXPECT_EQ(JsonQuote("\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E"),
            "\"\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E\"");
}

TEST(JsonQuoteTest, ReplacesInvalidUtf8) {
  const std::string fffd = "\xEF\xBF\xBD";
  // A lone continuation byte, a truncated sequence, an overlong encoding,
  // a UTF-16 surrogate, a byte that is never UTF-8.
  EXPECT_EQ(JsonQuote("a\x80z"), "\"a" + fffd + "z\"");
  EXPECT_EQ(JsonQuote("\xE2\x82"), "\"" + fffd + fffd + "\"");
  EXPECT_EQ(JsonQuote("\xC0\xAF"), "\"" + fffd + fffd + "\"");
  EXPECT_EQ(JsonQuote("\xED\xA0\x80"), "\"" + fffd + fffd + fffd + "\"");
  EXPECT_EQ(JsonQuote("\xFF"), "\"" + fffd + "\"");
  EXPECT_EQ(ValidUtf8("ok\xFE"), "ok" + fffd);
}

TEST(JsonQuoteTest, RoundTripsThroughTheParser) {
  const std::string text =
      std::string("line 1\nq\"uote\\ tab\t ctl\x02 nul", 27) +
      std::string(1, '\0') + " \xE2\x82\xAC";
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(JsonQuote(text)));
  EXPECT_EQ(v.kind, JsonValue::Kind::kString);
  EXPECT_EQ(v.string, text);
}

TEST(ParseJsonTest, ParsesEveryKind) {
  ASSERT_OK_AND_ASSIGN(
      JsonValue v,
      ParseJson(R"( {"a": [1, -2.5e3, 0], "b": {"c": true, "d": false},
                     "e": null, "f": "x\u00e9\ud834\udd1e"} )"));
  ASSERT_EQ(v.kind, JsonValue::Kind::kObject);
  const JsonValue* a = v.Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->array.size(), 3u);
  EXPECT_EQ(a->array[1].number, -2500);
  EXPECT_TRUE(v.Find("b")->Find("c")->boolean);
  EXPECT_EQ(v.Find("b")->Find("d")->kind, JsonValue::Kind::kBool);
  EXPECT_EQ(v.Find("e")->kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v.Find("f")->string, "x\xC3\xA9\xF0\x9D\x84\x9E");
  EXPECT_EQ(v.Find("missing"), nullptr);
}

TEST(ParseJsonTest, LoneSurrogatesBecomeReplacementCharacters) {
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJson(R"("\ud800x\udc00")"));
  EXPECT_EQ(v.string, "\xEF\xBF\xBDx\xEF\xBF\xBD");
}

TEST(ParseJsonTest, ErrorsNameTheColumnAndWhatWasExpected) {
  EXPECT_THAT(ParseJson(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("column 1: expected a value")));
  EXPECT_THAT(ParseJson(R"({"a" 1})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("column 6: expected ':'")));
  EXPECT_THAT(ParseJson(R"([1, 2)"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected ',' or ']', found end of input")));
  EXPECT_THAT(ParseJson(R"({"a": 1} x)"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("column 10: expected end of input")));
  EXPECT_THAT(ParseJson("\"a\nb\""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no control character")));
  EXPECT_THAT(ParseJson(R"("\x")"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("expected an escape")));
  EXPECT_THAT(
      ParseJson(R"("\u12g4")"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hex digit")));
  EXPECT_THAT(ParseJson("01"), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("expected end of input")));
  EXPECT_THAT(ParseJson("1."), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("a digit after '.'")));
  EXPECT_THAT(ParseJson("tru"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("expected a value")));
  EXPECT_THAT(ParseJson("{1: 2}"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("a member name")));
}

TEST(ParseJsonTest, RefusesDeepNesting) {
  EXPECT_OK(ParseJson(std::string(64, '[') + std::string(64, ']')));
  EXPECT_THAT(ParseJson(std::string(100000, '[')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at most 64 nested")));
}

}  // namespace
}  // namespace lathe::trace
