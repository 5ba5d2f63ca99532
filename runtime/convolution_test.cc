#include "runtime/convolution.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/packed_weights.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

// A convolution's shape and layout, and its geometry array.
struct Conv {
  int64_t n = 1, c = 1, o = 1, groups = 1;
  std::vector<int64_t> in, k, stride, pad, dil;
  bool channels_last = false;  // x and out as N, spatial..., C
  bool frozen = false;         // w a frozen constant (packed once)
  bool winograd = false;       // Winograd's algorithm asked for

  std::vector<int64_t> Out() const {
    std::vector<int64_t> out;
    for (size_t d = 0; d < in.size(); ++d) {
      out.push_back((in[d] + 2 * pad[d] - dil[d] * (k[d] - 1) - 1) / stride[d] +
                    1);
    }
    return out;
  }
  // Strides of [N, C, spatial...] stored contiguously, or channels last.
  static std::vector<int64_t> Strides(int64_t n, int64_t c,
                                      const std::vector<int64_t>& sp,
                                      bool last) {
    (void)n;
    size_t s = sp.size();
    std::vector<int64_t> st(2 + s);
    int64_t acc = last ? c : 1;
    for (size_t d = s; d-- > 0;) {
      st[2 + d] = acc;
      acc *= sp[d];
    }
    if (last) {
      st[1] = 1;
      st[0] = acc;
    } else {
      st[1] = acc;
      st[0] = acc * c;
    }
    return st;
  }
  std::vector<int64_t> Geometry() const {
    size_t s = in.size();
    std::vector<int64_t> g = {static_cast<int64_t>(s), groups, n, c, o};
    const std::vector<int64_t> out = Out();
    for (const auto* v : {&in, &k, &out, &stride, &pad, &dil}) {
      g.insert(g.end(), v->begin(), v->end());
    }
    std::vector<int64_t> ks = Strides(o, c / groups, k, false);
    for (const auto& st : {Strides(n, c, in, channels_last), ks,
                           Strides(n, o, out, channels_last)}) {
      g.push_back(0);
      g.insert(g.end(), st.begin(), st.end());
    }
    g.push_back((frozen ? kSconvFrozenWeights : 0) |
                (winograd ? kSconvWinograd : 0));
    return g;
  }
  int64_t Numel(int64_t lead, int64_t ch,
                const std::vector<int64_t>& sp) const {
    int64_t e = lead * ch;
    for (int64_t v : sp) e *= v;
    return e;
  }
};

// Sconv of `c` on random operands against the reference loops, `calls`
// times (frozen weights: packed at the first, kept for the next; forgotten
// after).
void ExpectMatchesReference(const Conv& c, std::mt19937& rng, int calls) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<int64_t> g = c.Geometry();
  std::vector<float> x(c.Numel(c.n, c.c, c.in)),
      w(c.Numel(c.o, c.c / c.groups, c.k));
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  int64_t m = c.Numel(c.n, c.o, c.Out());
  std::vector<float> got(m, -7), want(m, 7);
  EXPECT_TRUE(SconvUsesOneDnn(g.data()));
  SconvReference(g.data(), x.data(), w.data(), want.data());
  for (int call = 0; call < calls; ++call) {
    Sconv(g.data(), x.data(), w.data(), got.data());
    for (int64_t i = 0; i < m; ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-4)
          << "batch " << c.n << ", " << c.in.size() << " dims, " << c.in[0]
          << " rows, groups " << c.groups
          << (c.channels_last ? ", channels last" : "")
          << (c.frozen ? ", frozen" : "") << ", call " << call << ", element "
          << i;
    }
  }
  ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
}

TEST(ConvolutionTest, GeometrySizeMatchesTheLayout) {
  Conv c{1, 1, 1, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}};
  EXPECT_EQ(static_cast<int64_t>(c.Geometry().size()), SconvGeometrySize(2));
  // SconvAt's positions, on a geometry whose entries differ: 3 images, 2
  // groups, kernel 5x3, strides 2 and 4, dilations 3 and 1, frozen; out is
  // [3, 2, 3, 2] in NCHW, so its batch stride is 12.
  Conv d{3, 2, 2, 2, {15, 7}, {5, 3}, {2, 4}, {1, 0}, {3, 1}};
  d.frozen = true;
  const std::vector<int64_t> g = d.Geometry();
  const SconvAt at{2};
  EXPECT_EQ(g[SconvAt::kGroups], 2);
  EXPECT_EQ(g[SconvAt::kBatch], 3);
  EXPECT_EQ(g[at.Kernel(0)], 5);
  EXPECT_EQ(g[at.Kernel(1)], 3);
  EXPECT_EQ(g[at.Stride(0)], 2);
  EXPECT_EQ(g[at.Stride(1)], 4);
  EXPECT_EQ(g[at.Dilation(0)], 3);
  EXPECT_EQ(g[at.Dilation(1)], 1);
  EXPECT_EQ(g[at.OutOffset()], 0);
  EXPECT_EQ(d.Out(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(g[at.OutOffset() + 1], 12);
  EXPECT_EQ(g[at.Flags()], kSconvFrozenWeights);
}

// A 1-d convolution worked by hand: x = [1, 2, 3, 4], w = [1, 0, -1],
// padding 1: out[i] = x[i-1] - x[i+1] = [-2, -2, -2, 3].
TEST(ConvolutionTest, OneDimensionalByHand) {
  Conv c{1, 1, 1, 1, {4}, {3}, {1}, {1}, {1}};
  std::vector<int64_t> g = c.Geometry();
  std::vector<float> x = {1, 2, 3, 4}, w = {1, 0, -1};
  std::vector<float> want = {-2, -2, -2, 3};
  for (bool reference : {true, false}) {
    std::vector<float> out(4, 99);
    EXPECT_TRUE(SconvUsesOneDnn(g.data()));
    if (reference) {
      SconvReference(g.data(), x.data(), w.data(), out.data());
    } else {
      Sconv(g.data(), x.data(), w.data(), out.data());
    }
    EXPECT_EQ(out, want) << (reference ? "reference" : "oneDNN");
  }
}

// Frozen weights are packed at their first call and kept until forgotten:
// the same results as weights reordered on every call, one entry however
// many calls, none after ForgetFrozenWeights, and new values seen then.
TEST(ConvolutionTest, FrozenWeightsArePackedOnceUntilForgotten) {
  // More input than weights: the pieces (slices of images) share one copy.
  Conv c{4, 16, 32, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  c.channels_last = true;
  std::vector<int64_t> plain = c.Geometry();
  c.frozen = true;
  std::vector<int64_t> g = c.Geometry();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(c.Numel(4, 16, {12, 12})), w(32 * 16 * 9);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  const size_t n = c.Numel(4, 32, c.Out());
  std::vector<float> want(n), got(n);
  const int64_t before = FrozenWeightsKept();
  for (int call = 0; call < 3; ++call) {
    Sconv(plain.data(), x.data(), w.data(), want.data());
    Sconv(g.data(), x.data(), w.data(), got.data());
    EXPECT_EQ(got, want) << "call " << call;
  }
  EXPECT_EQ(FrozenWeightsKept(), before + 1);
  ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
  EXPECT_EQ(FrozenWeightsKept(), before);
  for (float& v : w) v = -v;
  Sconv(plain.data(), x.data(), w.data(), want.data());
  Sconv(g.data(), x.data(), w.data(), got.data());
  EXPECT_EQ(got, want);
  ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
}

// Packing frozen weights never writes them: channel counts off oneDNN's
// blocks of 8 and 16 (its packed layout is padded) leave the weights, and
// the memory after them, as they were.
TEST(ConvolutionTest, PackingFrozenWeightsLeavesThemAsTheyWere) {
  for (auto [cin, cout] : {std::pair<int64_t, int64_t>{3, 6}, {5, 20}}) {
    Conv c{2, cin, cout, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
    c.channels_last = true;
    std::vector<int64_t> plain = c.Geometry();
    c.frozen = true;
    std::vector<int64_t> g = c.Geometry();
    std::vector<float> x(c.Numel(2, cin, {7, 7}));
    for (size_t k = 0; k < x.size(); ++k) x[k] = 0.25f * (k % 7) - 0.5f;
    const size_t wn = cout * cin * 9;
    std::vector<float> w(wn + 4096, 7.0f);  // canaries after the weights
    for (size_t k = 0; k < wn; ++k) w[k] = 0.125f * (k % 11) - 0.5f;
    const std::vector<float> before = w;
    const size_t n = c.Numel(2, cout, c.Out());
    std::vector<float> want(n), got(n);
    const int64_t kept = FrozenWeightsKept();
    for (int call = 0; call < 2; ++call) {
      Sconv(plain.data(), x.data(), w.data(), want.data());
      Sconv(g.data(), x.data(), w.data(), got.data());
      EXPECT_EQ(got, want) << cin << " -> " << cout << ", call " << call;
      EXPECT_EQ(w, before) << cin << " -> " << cout << ", call " << call;
    }
    EXPECT_EQ(FrozenWeightsKept(), kept + 1) << cin << " -> " << cout;
    ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
  }
}

// Two groups of one channel each, stride 2: each output channel sees only
// its own input channel.
TEST(ConvolutionTest, GroupsReadTheirOwnChannels) {
  Conv c{1, 2, 2, 2, {4}, {2}, {2}, {0}, {1}};
  std::vector<int64_t> g = c.Geometry();
  std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40}, w = {1, 1, 1, -1};
  // Channel 0: [1+2, 3+4]; channel 1: [10-20, 30-40].
  std::vector<float> want = {3, 7, -10, -10};
  std::vector<float> out(4);
  Sconv(g.data(), x.data(), w.data(), out.data());
  EXPECT_EQ(out, want);
}

// oneDNN against the reference loops over many geometries and layouts.
TEST(ConvolutionTest, OneDnnMatchesTheReference) {
  std::mt19937 rng(7);
  std::vector<Conv> cases = {
      {2, 3, 8, 1, {9, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {2, 4, 6, 2, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {1, 4, 4, 4, {7, 9}, {3, 3}, {1, 2}, {2, 1}, {2, 1}},
      {2, 3, 5, 1, {16}, {5}, {3}, {2}, {1}},
      {1, 2, 4, 1, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}},
      {3, 16, 32, 1, {12, 12}, {1, 1}, {1, 1}, {0, 0}, {1, 1}},
      {1, 3, 4, 1, {10, 10}, {3, 3}, {3, 3}, {0, 0}, {1, 1}},  // floor drop
  };
  for (bool last : {false, true}) {
    for (Conv c : cases) {
      c.channels_last = last;
      ExpectMatchesReference(c, rng, 1);
    }
  }
}

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

// Convolutions of 2^18 multiply-adds or more run in pieces on the
// runtime's pool with a team of 3 (6 pieces wanted): a batch of 6 images or
// more by slices of images (the last shorter); a smaller batch with each
// image by slices of its output rows (each slice's input rows with their
// halo, the padding only where a slice has it; strided, dilated, grouped,
// 1-d and 3-d), or an image a piece where a slice would read only padding;
// one image of one output row, or weights larger than the images, by
// slices of output channels. Weights
// are reordered once for all pieces (in slices of output channels where
// they are several of oneDNN's blocks) or frozen, in both layouts.
TEST(ConvolutionTest, PiecesOnThePoolMatchTheReference) {
  const int team = omp_get_max_threads();
  omp_set_num_threads(3);
  std::mt19937 rng(11);
  std::vector<Conv> cases = {
      {5, 16, 32, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {29, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 48, 1, {40, 17}, {5, 3}, {2, 1}, {3, 1}, {2, 1}},
      {1, 16, 64, 1, {300}, {7}, {1}, {3}, {1}},
      {1, 8, 16, 1, {13, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
      {4, 32, 32, 4, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      // Weights of several of oneDNN's blocks of output channels: their
      // reorder runs in slices on the pool.
      {3, 16, 256, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 192, 1, {9, 9}, {3, 3}, {1, 1}, {0, 0}, {1, 1}},
      // 7 images: slices of 2 (the last 1).
      {7, 8, 32, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      // One output row: slices of output channels.
      {1, 64, 128, 1, {3, 40}, {3, 3}, {1, 1}, {0, 1}, {1, 1}},
      // A row slice would read only padding: an image a piece.
      {2, 16, 32, 1, {2, 10}, {3, 3}, {1, 1}, {6, 1}, {1, 1}},
      // Weights larger than the images: slices of output channels.
      {8, 64, 128, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
  };
  for (bool last : {false, true}) {
    for (bool frozen : {false, true}) {
      for (Conv c : cases) {
        c.channels_last = last;
        c.frozen = frozen;
        ExpectMatchesReference(c, rng, 2);
      }
    }
  }
  omp_set_num_threads(team);
}

// Whether this CPU has oneDNN's f32 Winograd kernels: oneDNN 2.6 has them
// for AVX-512 (its avx512_core: F, BW, VL and DQ) alone, so an AVX2 CPU
// runs every convolution by the direct algorithm.
bool CpuHasWinograd() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
}

// Winograd's algorithm where asked: 3x3 convolutions of stride 1 run by
// oneDNN's Winograd kernel (on a CPU that has it; else the direct one),
// whole or in pieces on a team of 3, frozen or not, in both layouts,
// within the tolerance of the direct one; where oneDNN has no Winograd
// kernel (strided, dilated, grouped, 1-d, 5x5) the flag runs the direct
// algorithm, with the same results as without it.
TEST(ConvolutionTest, WinogradWhereOneDnnHasIt) {
  const int team = omp_get_max_threads();
  std::mt19937 rng(13);
  const std::vector<Conv> eligible = {
      {2, 16, 32, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {6, 16, 32, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 32, 1, {20, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
  };
  const std::vector<Conv> not_eligible = {
      {2, 16, 32, 1, {12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {2, 16, 32, 1, {12, 12}, {3, 3}, {1, 1}, {2, 2}, {2, 2}},
      {2, 16, 32, 2, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {2, 16, 32, 1, {40}, {3}, {1}, {1}, {1}},
      {2, 16, 32, 1, {12, 12}, {5, 5}, {1, 1}, {2, 2}, {1, 1}},
  };
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    for (bool last : {false, true}) {
      for (bool frozen : {false, true}) {
        for (Conv c : eligible) {
          c.channels_last = last;
          c.frozen = frozen;
          c.winograd = true;
          std::vector<int64_t> g = c.Geometry();
          EXPECT_EQ(SconvUsesWinograd(g.data()), CpuHasWinograd())
              << c.n << " images, " << c.c << " -> " << c.o << ", threads "
              << threads;
          ExpectMatchesReference(c, rng, 2);
          c.winograd = false;
          g = c.Geometry();
          EXPECT_FALSE(SconvUsesWinograd(g.data()));
        }
        for (Conv c : not_eligible) {
          if (threads != 1 || frozen) continue;  // the flag is not read
          c.channels_last = last;
          c.winograd = true;
          std::vector<int64_t> g = c.Geometry();
          EXPECT_FALSE(SconvUsesWinograd(g.data()))
              << c.in.size() << " dims, stride " << c.stride[0] << ", groups "
              << c.groups << ", kernel " << c.k[0];
          ExpectMatchesReference(c, rng, 1);
        }
      }
    }
  }
  omp_set_num_threads(team);
}

// Winograd's errors on wide channels (256 -> 256, 7x7, as ResNet-18's
// third stage; inputs in [0, 1) as after a relu, weights He-scaled): within
// 1e-5 of the output's largest magnitude (measured 2.7e-6; the direct
// algorithm's 1.6e-6).
TEST(ConvolutionTest, WinogradErrorsStaySmallOnWideChannels) {
  if (!CpuHasWinograd()) {
    GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU (no AVX-512)";
  }
  Conv c{2, 256, 256, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  c.channels_last = true;
  c.frozen = true;
  c.winograd = true;
  std::vector<int64_t> g = c.Geometry();
  ASSERT_TRUE(SconvUsesWinograd(g.data()));
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(0, 1);
  std::normal_distribution<float> n(0, std::sqrt(2.0f / (256 * 9)));
  std::vector<float> x(c.Numel(2, 256, {7, 7})), w(256 * 256 * 9);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = n(rng);
  const size_t m = c.Numel(2, 256, c.Out());
  std::vector<float> got(m), want(m);
  SconvReference(g.data(), x.data(), w.data(), want.data());
  Sconv(g.data(), x.data(), w.data(), got.data());
  float scale = 0, error = 0;
  for (size_t i = 0; i < m; ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    error = std::max(error, std::fabs(got[i] - want[i]));
  }
  EXPECT_GT(scale, 1.0f);
  EXPECT_LE(error, 1e-5f * scale) << "scale " << scale;
  ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
}

// An epilogue runs once for each image, after that image is written: it
// copies the image out, and the copies are the whole result. Batches cut
// into slices of images (a team of 3, each slice's images on its thread),
// one image cut into rows or channels, Winograd's algorithm, frozen
// weights, and one thread all hand over every image once.
TEST(ConvolutionTest, EpiloguesRunOnceForEachImageAfterItIsWritten) {
  const int team = omp_get_max_threads();
  struct Seen {
    const float* out;
    int64_t image_elems;
    std::vector<float> copy;
    std::vector<std::atomic<int>> calls;
  };
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Conv> cases = {
      {8, 16, 32, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {3, 4, 16, 1, {64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},  // 256 KB
      {1, 16, 32, 1, {29, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {1, 64, 128, 1, {3, 40}, {3, 3}, {1, 1}, {0, 1}, {1, 1}},
      {3, 4, 8, 2, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      // Weights larger than the images: slices of output channels, the
      // epilogues after, an image per thread.
      {4, 64, 128, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
  };
  struct Variant {
    int threads;
    bool winograd, frozen;
  };
  for (const auto [threads, winograd, frozen] :
       {Variant{1, false, false}, Variant{3, false, false},
        Variant{3, false, true}, Variant{3, true, true}}) {
    omp_set_num_threads(threads);
    for (Conv c : cases) {
      c.channels_last = true;
      c.winograd = winograd;
      c.frozen = frozen;
      std::vector<int64_t> g = c.Geometry();
      std::vector<float> x(c.Numel(c.n, c.c, c.in)),
          w(c.Numel(c.o, c.c / c.groups, c.k));
      for (float& v : x) v = u(rng);
      for (float& v : w) v = u(rng);
      const int64_t m = c.Numel(c.n, c.o, c.Out());
      std::vector<float> out(m, -7), want(m);
      SconvReference(g.data(), x.data(), w.data(), want.data());
      Seen seen{out.data(), m / c.n, std::vector<float>(m, 99),
                std::vector<std::atomic<int>>(c.n)};
      Sconv(
          g.data(), x.data(), w.data(), out.data(),
          [](void* ctx, int64_t n) {
            Seen& s = *static_cast<Seen*>(ctx);
            std::copy(s.out + n * s.image_elems,
                      s.out + (n + 1) * s.image_elems,
                      s.copy.begin() + n * s.image_elems);
            s.calls[n].fetch_add(1);
          },
          &seen);
      const std::string what =
          absl::StrCat(c.n, " images of ", c.in[0], "x", c.in[1], ", ", c.c,
                       " -> ", c.o, ", threads ", threads,
                       winograd ? ", winograd" : "", frozen ? ", frozen" : "");
      for (int64_t n = 0; n < c.n; ++n) {
        EXPECT_EQ(seen.calls[n].load(), 1) << what << ", image " << n;
      }
      for (int64_t i = 0; i < m; ++i) {
        ASSERT_NEAR(seen.copy[i], want[i], 1e-4) << what << ", element " << i;
      }
      ForgetFrozenWeights(w.data(), static_cast<int64_t>(w.size() * 4));
    }
  }
  omp_set_num_threads(team);
}

// Empty operands go to the reference loops: zero input channels give
// zeros, zero batch writes nothing.
// Where the host memory limit refuses the buffers oneDNN's layouts need
// (an NCHW input reordered, frozen weights packed), the convolution runs
// the reference loops and gives their results; nothing counted passes the
// limit. On a thread of its own, whose buffers start empty.
TEST(ConvolutionTest, BuffersTheMemoryLimitRefusesLeaveTheReference) {
  std::thread([] {
    std::mt19937 rng(11);
    const int64_t limit = HostMemoryLimit();
    SetHostMemoryLimit(HostMemoryInUse());
    for (bool frozen : {false, true}) {
      Conv c{2, 8, 16, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
      c.frozen = frozen;
      ExpectMatchesReference(c, rng, 2);
      EXPECT_LE(HostMemoryInUse(), HostMemoryLimit());
    }
    SetHostMemoryLimit(limit);
  }).join();
}

TEST(ConvolutionTest, EmptyOperands) {
  Conv c{1, 0, 2, 1, {4}, {1}, {1}, {0}, {1}};
  std::vector<int64_t> g = c.Geometry();
  std::vector<float> out(8, 5);
  EXPECT_FALSE(SconvUsesOneDnn(g.data()));
  Sconv(g.data(), nullptr, nullptr, out.data());
  EXPECT_EQ(out, std::vector<float>(8, 0));
  Conv b{0, 2, 2, 1, {4}, {1}, {1}, {0}, {1}};
  g = b.Geometry();
  Sconv(g.data(), nullptr, nullptr, nullptr);
}

// A convolution oneDNN does not take (no input channels: the reference
// loops write zeros) still runs its epilogue once for each image, after
// the output is written, on one thread and on a team of 3.
TEST(ConvolutionTest, TheReferencePathRunsTheEpilogueToo) {
  const int team = omp_get_max_threads();
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    Conv c{4, 0, 2, 1, {4}, {1}, {1}, {0}, {1}};
    std::vector<int64_t> g = c.Geometry();
    ASSERT_FALSE(SconvUsesOneDnn(g.data()));
    struct Seen {
      const float* out;
      std::vector<std::atomic<int>> calls;
      std::atomic<bool> written{true};
    } seen{nullptr, std::vector<std::atomic<int>>(4)};
    std::vector<float> out(32, 5);
    seen.out = out.data();
    Sconv(
        g.data(), nullptr, nullptr, out.data(),
        [](void* ctx, int64_t n) {
          Seen& s = *static_cast<Seen*>(ctx);
          for (int i = 0; i < 8; ++i) {
            if (s.out[n * 8 + i] != 0) s.written = false;
          }
          s.calls[n].fetch_add(1);
        },
        &seen);
    for (int n = 0; n < 4; ++n) {
      EXPECT_EQ(seen.calls[n].load(), 1) << "image " << n;
    }
    EXPECT_TRUE(seen.written.load()) << "threads " << threads;
  }
  omp_set_num_threads(team);
}

}  // namespace
}  // namespace lathe
