#include "testing/sample.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace lathe::testing {
namespace {

TEST(SampleTest, EveryCaseUnlessASampleIsSet) {
  ::unsetenv("LATHE_TEST_SAMPLE");
  EXPECT_EQ(SampleStride(), 1);
  for (size_t i = 0; i < 10; ++i) EXPECT_TRUE(InSample(i));
  ::setenv("LATHE_TEST_SAMPLE", "junk", 1);
  EXPECT_EQ(SampleStride(), 1);
  ::setenv("LATHE_TEST_SAMPLE", "0", 1);
  EXPECT_EQ(SampleStride(), 1);
}

TEST(SampleTest, ChunksSplitTheCasesAndSampleEachChunk) {
  ::unsetenv("LATHE_TEST_SAMPLE");
  // 20 cases in 4 chunks: each case in exactly one.
  for (size_t i = 0; i < 20; ++i) {
    int in = 0;
    for (int c = 0; c < 4; ++c) in += InChunk(i, c, 4) ? 1 : 0;
    EXPECT_EQ(in, 1) << i;
  }
  ::setenv("LATHE_TEST_SAMPLE", "3", 1);
  EXPECT_EQ(SampleStride(), 3);
  EXPECT_TRUE(InSample(0));
  EXPECT_FALSE(InSample(1));
  EXPECT_TRUE(InSample(6));
  // Chunk 1 of 4 holds cases 1, 5, 9, 13, ...; the sample keeps 1 and 13.
  std::vector<size_t> kept;
  for (size_t i = 0; i < 20; ++i) {
    if (InChunk(i, 1, 4)) kept.push_back(i);
  }
  EXPECT_EQ(kept, (std::vector<size_t>{1, 13}));
  ::unsetenv("LATHE_TEST_SAMPLE");
}

}  // namespace
}  // namespace lathe::testing
