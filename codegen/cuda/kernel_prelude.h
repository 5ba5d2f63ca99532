// -----------------------------------------------------------------------------
// File: kernel_prelude.h
// -----------------------------------------------------------------------------
//
// The device helpers of the cuda emitter's kernels (cuda_emitter.h),
// embedded in every kernels' source after the scalar prelude (which gives
// LATHE_FN, lathe_std and the lathe_op_* functions): the vector access
// type, the accumulators of argmax/argmin and of a thread's share of a
// Welford reduction (the block merges the scalar prelude's), the functors that
// combine two accumulators, the block-wide reduction and scan every row
// kernel ends a section with (a block of one thread, a serial kernel's,
// skips them), and the device side of an index check. Not a
// standalone header: NVRTC compiles it for a GPU, and the system compiler
// against runtime/cuda/cuda_emulation.h for the emulated device.
//
// Example (a row's sum, every thread of the block calling):
//
//   __shared__ lathe_slot slots[8];
//   float acc = 0;
//   for (int j = threadIdx.x; j < 2560; j += blockDim.x) acc += row[j];
//   acc = lathe_block_reduce(acc, lathe_red_sum{}, slots);

#define LATHE_FN_MEMBER __device__ __forceinline__

// A vector access's elements (one 16-byte load or store at most).
template <typename T, int N>
struct alignas(sizeof(T) * N) lathe_vec {
  T v[N];
};

// A row's reductions (one block per row).
template <typename T>
struct lathe_argacc {
  T v;
  int64_t i;
};
// A thread's share of a Welford reduction (var, mean, the norms): its
// values in chunks of kLatheWelfordChunk, each kept as sums shifted by the
// chunk's first value (0 if that is not finite, so an infinity's chunk has
// an infinite mean, as sum / n) in T (float for f32, f16 and bf16, as the
// cpu backend's blocks compute; double for f64), so a value costs no
// division; a full chunk is merged into `w` in double (Chan's merge), as the
// block's threads' shares are. One pass of shifted sums loses what
// q - s * s / n cancels, up to about n times T's rounding when the shift is
// an outlier (the cpu backend's blocks take two passes); chunks of 16 keep
// that near f32's own rounding.
constexpr int32_t kLatheWelfordChunk = 16;
// A finite value farther than this from its chunk's shift would overflow
// the chunk's sums of squares in T (16 squares of 1e18 are 1.6e37): it is
// merged alone, in double, as PyTorch's CPU var accumulates float.
template <typename T>
LATHE_FN T lathe_welford_far() {
  if constexpr (sizeof(T) == sizeof(double)) {
    return T(1e150);
  } else {
    return T(1e18);
  }
}
template <typename T>
struct lathe_welford_run {
  lathe_welford w;
  T shift, s, q;
  int32_t n;
};
// The current chunk as Welford's mean and M2 (n > 0).
template <typename T>
LATHE_FN lathe_welford lathe_welford_chunk(const lathe_welford_run<T>& a) {
  const double n = a.n, s = a.s;
  const double m2 = static_cast<double>(a.q) - s * s / n;
  return {static_cast<double>(a.shift) + s / n, m2 < 0 ? 0.0 : m2, a.n};
}
template <typename T>
LATHE_FN lathe_welford_run<T> lathe_welford_run_add(lathe_welford_run<T> a,
                                                    T x) {
  if (a.n == 0) a.shift = lathe_op_isfinite(x) ? x : T(0);  // inf: mean inf
  const T d = x - a.shift;
  if (!(d <= lathe_welford_far<T>() && d >= -lathe_welford_far<T>()) &&
      lathe_op_isfinite(x)) {  // (n > 0: a chunk's first value has d = 0)
    a.w = lathe_welford_merge(a.w, lathe_welford_chunk(a));
    a.w =
        lathe_welford_merge(a.w, lathe_welford{static_cast<double>(x), 0.0, 1});
    a.n = 0;
    a.s = 0;
    a.q = 0;
    return a;
  }
  a.s += d;
  a.q += d * d;
  if (++a.n == kLatheWelfordChunk) {
    a.w = lathe_welford_merge(a.w, lathe_welford_chunk(a));
    a.n = 0;
    a.s = 0;
    a.q = 0;
  }
  return a;
}
// The thread's whole share, for the block's merge.
template <typename T>
LATHE_FN lathe_welford lathe_welford_of(const lathe_welford_run<T>& a) {
  return a.n == 0 ? a.w : lathe_welford_merge(a.w, lathe_welford_chunk(a));
}
// One 24-byte slot per warp for the block's partial results.
struct alignas(8) lathe_slot {
  unsigned char bytes[24];
};

template <typename T>
LATHE_FN T lathe_shfl_xor(T v, int lane_mask) {
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(
        __shfl_xor_sync(0xffffffffu, static_cast<int>(v), lane_mask));
  } else {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
  }
}
template <typename T>
LATHE_FN lathe_argacc<T> lathe_shfl_xor(lathe_argacc<T> a, int lane_mask) {
  return {lathe_shfl_xor(a.v, lane_mask), lathe_shfl_xor(a.i, lane_mask)};
}
LATHE_FN lathe_welford lathe_shfl_xor(lathe_welford a, int lane_mask) {
  return {lathe_shfl_xor(a.mean, lane_mask), lathe_shfl_xor(a.m2, lane_mask),
          lathe_shfl_xor(a.n, lane_mask)};
}

struct lathe_red_sum {
  template <typename T>
  LATHE_FN_MEMBER T operator()(T a, T b) const {
    return lathe_op_add(a, b);
  }
};
struct lathe_red_log_add_exp {
  template <typename T>
  LATHE_FN_MEMBER T operator()(T a, T b) const {
    return lathe_log_add_exp(a, b);
  }
};
struct lathe_red_prod {
  template <typename T>
  LATHE_FN_MEMBER T operator()(T a, T b) const {
    return lathe_op_mul(a, b);
  }
};
struct lathe_red_max {  // NaN propagates
  template <typename T>
  LATHE_FN_MEMBER T operator()(T a, T b) const {
    return lathe_op_maximum(a, b);
  }
};
struct lathe_red_min {
  template <typename T>
  LATHE_FN_MEMBER T operator()(T a, T b) const {
    return lathe_op_minimum(a, b);
  }
};
struct lathe_red_any {
  LATHE_FN_MEMBER bool operator()(bool a, bool b) const { return a || b; }
};
struct lathe_red_all {
  LATHE_FN_MEMBER bool operator()(bool a, bool b) const { return a && b; }
};
// The first index of the maximum (minimum); NaN counts as the extreme.
template <bool kMax>
struct lathe_red_arg {
  template <typename T>
  LATHE_FN_MEMBER lathe_argacc<T> operator()(lathe_argacc<T> a,
                                             lathe_argacc<T> b) const {
    bool take_b;
    if (a.v != a.v) {
      take_b = b.v != b.v && b.i < a.i;
    } else if (b.v != b.v) {
      take_b = true;
    } else {
      take_b = (kMax ? b.v > a.v : b.v < a.v) || (b.v == a.v && b.i < a.i);
    }
    return take_b ? b : a;
  }
};
// Chan's merge of two Welford accumulators (the scalar prelude's).
struct lathe_red_welford {
  LATHE_FN_MEMBER lathe_welford operator()(lathe_welford a,
                                           lathe_welford b) const {
    return lathe_welford_merge(a, b);
  }
};

template <typename T>
LATHE_FN T lathe_shfl_up(T v, int delta) {
  if constexpr (sizeof(T) < 4) {
    return static_cast<T>(
        __shfl_up_sync(0xffffffffu, static_cast<int>(v), delta));
  } else {
    return __shfl_up_sync(0xffffffffu, v, delta);
  }
}

// The inclusive scan by `f` of the threads' `v` in thread order, after
// `*carry` (the scan of the chunks before), which becomes the scan
// through the last thread: every thread of the block calls it.
template <typename T, typename F>
LATHE_FN T lathe_block_scan(T v, F f, T* carry, lathe_slot* slots) {
  static_assert(sizeof(T) <= sizeof(lathe_slot), "a wider accumulator");
  if (blockDim.x == 1) return *carry = f(*carry, v);  // a serial kernel
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 1; o < 32; o <<= 1) {
    const T u = lathe_shfl_up(v, o);
    if (lane >= static_cast<unsigned>(o)) v = f(u, v);
  }
  T* partial = reinterpret_cast<T*>(slots);
  __syncthreads();  // the slots' last readers are done
  if (lane == 31) partial[warp] = v;
  __syncthreads();
  T prefix = *carry;
  for (unsigned w = 0; w < warp; ++w) prefix = f(prefix, partial[w]);
  T total = *carry;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total = f(total, partial[w]);
  *carry = total;
  return f(prefix, v);
}

// A failing index check: the first to claim the call's check record
// (ck[0], 0 before) writes its code and its two values; the host reads it
// after the kernel.
LATHE_FN void lathe_device_check_failed(int64_t* ck, int64_t code,
                                        int64_t given, int64_t bound) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(ck), 0ull,
                static_cast<unsigned long long>(code)) == 0ull) {
    ck[1] = 2;
    ck[2] = given;
    ck[3] = bound;
  }
}

// Every thread's `v` combined by `f` in a fixed tree (across each warp,
// then the warps in order through `slots`): the same result in every
// thread, and the same on every run. Every thread of the block calls it.
template <typename T, typename F>
LATHE_FN T lathe_block_reduce(T v, F f, lathe_slot* slots) {
  static_assert(sizeof(T) <= sizeof(lathe_slot), "a wider accumulator");
  if (blockDim.x == 1) return v;  // a serial kernel
  for (int o = 16; o > 0; o >>= 1) v = f(v, lathe_shfl_xor(v, o));
  T* partial = reinterpret_cast<T*>(slots);
  __syncthreads();  // the slots' last readers are done
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) v = f(v, partial[w]);
  return v;
}
