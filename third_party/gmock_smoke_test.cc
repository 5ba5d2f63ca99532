// Proves GoogleTest + GoogleMock are wired: matchers and a mock object.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::Ge;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Return;
using ::testing::UnorderedElementsAre;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* Allocate(size_t bytes) = 0;
};

class MockAllocator : public Allocator {
 public:
  MOCK_METHOD(void*, Allocate, (size_t bytes), (override));
};

TEST(GmockSmokeTest, Matchers) {
  std::vector<int> sizes = {2, 3, 4};
  EXPECT_THAT(sizes, ElementsAre(2, 3, 4));
  EXPECT_THAT(sizes, UnorderedElementsAre(4, 2, 3));
  EXPECT_THAT(std::string("line 3:7: expected ')'"),
              AllOf(HasSubstr("3:7"), Not(HasSubstr("warning"))));
  EXPECT_THAT(sizes.size(), Ge(3u));
}

TEST(GmockSmokeTest, MockExpectations) {
  MockAllocator allocator;
  static char buffer[64];
  EXPECT_CALL(allocator, Allocate(64)).WillOnce(Return(buffer));
  Allocator& base = allocator;
  EXPECT_EQ(base.Allocate(64), buffer);
}

}  // namespace
