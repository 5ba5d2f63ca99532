#include "runtime/bf16_gemm.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/status/statusor.h"
#include "dnnl.h"
#include "runtime/half.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"
#include "runtime/storage.h"

namespace lathe {
namespace {

using onednn::Ok;

// The product's sizes and strides: batch, m, n, k, then a's, b's and c's
// (batch, row, column) strides, then 1 when b is frozen (packed_weights.h),
// else 0.
using Geometry = std::array<int64_t, 14>;

float FromBf16(uint16_t bits) { return BFloat16{bits}.ToFloat(); }

// A matrix's dims and strides for oneDNN: [batch,] rows, columns; a dim of
// size 1 gets the stride the dense layout would give it (oneDNN reads no
// element through it), a broadcast batch (stride 0) becomes a batch of 1.
// False when a stride is one oneDNN cannot take (0 or negative: a row or
// column broadcast).
bool Dims(int64_t batch, int64_t rows, int64_t cols, int64_t bs, int64_t rs,
          int64_t cs, int* nd, dnnl_dims_t dims, dnnl_dims_t strides) {
  if (cols == 1) cs = 1;
  if (rows == 1) rs = cols * cs;
  if (rs <= 0 || cs <= 0) return false;
  if (batch == 1) {
    *nd = 2;
    dims[0] = rows, dims[1] = cols;
    strides[0] = rs, strides[1] = cs;
    return true;
  }
  if (bs < 0) return false;
  *nd = 3;
  dims[0] = bs == 0 ? 1 : batch, dims[1] = rows, dims[2] = cols;
  strides[0] = bs == 0 ? rows * rs : bs, strides[1] = rs, strides[2] = cs;
  return true;
}

// A matmul primitive for one geometry, and its operands' layouts. For a
// frozen b, the primitive reads b packed into the layout it picks (b_in
// from b_md to packed_md, kept: packed_weights.h); a matmul given b in its
// own strides repacks its part of b on every run (for AMX: pairs of rows
// interleaved, in column blocks).
struct Plan {
  ~Plan() {
    for (dnnl_primitive_t p : {matmul, b_in}) {
      if (p != nullptr) dnnl_primitive_destroy(p);
    }
  }
  dnnl_primitive_t matmul = nullptr;
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_primitive_t b_in = nullptr;  // null: the primitive reads b_md
  dnnl_memory_desc_t packed_md;
};

// The reorder of a frozen b into the layout `pd` picks for it, when that is
// not b's own; false when oneDNN fails.
bool BuildPacking(const_dnnl_primitive_desc_t pd, Plan* plan) {
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  if (md == nullptr) return false;
  if (dnnl_memory_desc_equal(md, &plan->b_md)) return true;
  plan->packed_md = *md;
  dnnl_primitive_desc_t reorder = nullptr;
  if (!Ok(dnnl_reorder_primitive_desc_create(
          &reorder, &plan->b_md, onednn::Engine(), &plan->packed_md,
          onednn::Engine(), onednn::Attributes()))) {
    return false;
  }
  const bool ok = Ok(dnnl_primitive_create(&plan->b_in, reorder));
  dnnl_primitive_desc_destroy(reorder);
  return ok;
}

// Builds the plan for `g`, for one thread; false when oneDNN does not take
// it.
bool BuildPlan(const Geometry& g, Plan* plan) {
  onednn::OneThread one;
  const auto [batch, m, n, k] = std::array<int64_t, 4>{g[0], g[1], g[2], g[3]};
  if (onednn::Engine() == nullptr || batch <= 0 || m <= 0 || n <= 0 || k <= 0) {
    return false;
  }
  int na, nb, nc;
  dnnl_dims_t ad, as, bd, bs, cd, cs;
  if (!Dims(batch, m, k, g[4], g[5], g[6], &na, ad, as) ||
      !Dims(batch, k, n, g[7], g[8], g[9], &nb, bd, bs) ||
      !Dims(batch, m, n, g[10], g[11], g[12], &nc, cd, cs) ||
      (batch > 1 && g[10] == 0)) {  // every batch writes its own c
    return false;
  }
  if (!Ok(dnnl_memory_desc_init_by_strides(&plan->a_md, na, ad, dnnl_bf16,
                                           as)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->b_md, nb, bd, dnnl_bf16,
                                           bs)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->c_md, nc, cd, dnnl_f32,
                                           cs))) {
    return false;
  }
  const bool frozen = g[13] != 0;
  dnnl_memory_desc_t b_any;
  if (frozen && !Ok(dnnl_memory_desc_init_by_tag(&b_any, nb, bd, dnnl_bf16,
                                                 dnnl_format_tag_any))) {
    return false;
  }
  dnnl_matmul_desc_t desc;
  if (!Ok(dnnl_matmul_desc_init(&desc, &plan->a_md,
                                frozen ? &b_any : &plan->b_md, nullptr,
                                &plan->c_md))) {
    return false;
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_primitive_desc_create(&pd, &desc, onednn::Attributes(),
                                     onednn::Engine(), nullptr))) {
    return false;
  }
  bool ok = (!frozen || BuildPacking(pd, plan)) &&
            Ok(dnnl_primitive_create(&plan->matmul, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

// The cached plan for a geometry, or null when oneDNN does not take it.
// Plans live as long as the process.
const Plan* PlanFor(const Geometry& g) {
  static std::mutex* mu = new std::mutex();
  static auto* plans = new std::map<Geometry, std::unique_ptr<Plan>>();
  std::lock_guard<std::mutex> lock(*mu);
  auto it = plans->find(g);
  if (it == plans->end()) {
    auto plan = std::make_unique<Plan>();
    if (!BuildPlan(g, plan.get())) plan.reset();
    it = plans->emplace(g, std::move(plan)).first;
  }
  return it->second.get();
}

// Runs the plan (b packed once, at its first call, where the plan packs
// it); false when oneDNN fails (nothing usable was written).
bool RunPlan(const Plan& p, const void* a, const void* b, float* c) {
  dnnl_stream_t stream = onednn::Stream();
  if (stream == nullptr) return false;
  dnnl_memory_t weights =
      p.b_in == nullptr ? nullptr
                        : onednn::KeptPacking(b, p.b_md, p.packed_md, p.b_in);
  if (p.b_in != nullptr && weights == nullptr) return false;
  // b's own memory, where the plan reads it as it is.
  std::unique_ptr<onednn::Memory> bm;
  if (weights == nullptr) {
    bm = std::make_unique<onednn::Memory>(p.b_md, const_cast<void*>(b));
    weights = bm->m;
  }
  onednn::Memory am(p.a_md, const_cast<void*>(a));
  onednn::Memory cm(p.c_md, c);
  if (am.m == nullptr || weights == nullptr || cm.m == nullptr) return false;
  return onednn::Execute(stream, p.matmul,
                         {{DNNL_ARG_SRC, am.m},
                          {DNNL_ARG_WEIGHTS, weights},
                          {DNNL_ARG_DST, cm.m}}) &&
         Ok(dnnl_stream_wait(stream));
}

// The product through f32: the operands converted into dense f32 copies,
// oneDNN's sgemm on them, the result scattered into c (what a CPU without
// bf16 matmuls in oneDNN, or a layout the primitive refuses, takes);
// false when the copies do not fit in the host memory limit or sgemm fails.
bool ViaSgemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
              int64_t c_rs, int64_t c_cs) {
  int64_t ab, bb, cb, elems;
  if (m <= 0 || n <= 0 || k <= 0 || __builtin_mul_overflow(m, k, &ab) ||
      __builtin_mul_overflow(k, n, &bb) || __builtin_mul_overflow(m, n, &cb) ||
      __builtin_add_overflow(ab, bb, &elems) ||
      __builtin_add_overflow(elems, cb, &elems) ||
      elems > INT64_MAX / static_cast<int64_t>(sizeof(float))) {
    return false;
  }
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  // The copies count against the host memory limit, as the kernels'
  // buffers do; when they do not fit, the reference loops (no copies) run.
  absl::StatusOr<Storage> copies =
      Storage::AllocateUninitialized(elems * sizeof(float));
  if (!copies.ok()) return false;
  float* xa = static_cast<float*>(copies->data());
  float* yb = xa + ab;
  float* out = yb + bb;
  for (int64_t t = 0; t < batch; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t l = 0; l < k; ++l) {
        xa[i * k + l] = FromBf16(x[t * a_bs + i * a_rs + l * a_cs]);
      }
    }
    for (int64_t l = 0; l < k; ++l) {
      for (int64_t j = 0; j < n; ++j) {
        yb[l * n + j] = FromBf16(y[t * b_bs + l * b_rs + j * b_cs]);
      }
    }
    if (!Ok(dnnl_sgemm('N', 'N', m, n, k, 1.0f, xa, k, yb, n, 0.0f, out, n))) {
      return false;
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        c[t * c_bs + i * c_rs + j * c_cs] = out[i * n + j];
      }
    }
  }
  return true;
}

// One piece of Bf16Gemm, on this thread; `frozen`: b is a frozen
// constant's (packed once).
void Product(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
             int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
             int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
             int64_t c_rs, int64_t c_cs, bool frozen = false) {
  if (frozen) {
    const Plan* plan = PlanFor({batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs,
                                b_cs, c_bs, c_rs, c_cs, 1});
    if (plan != nullptr && RunPlan(*plan, a, b, c)) return;
  }
  const Plan* plan = PlanFor({batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs,
                              b_cs, c_bs, c_rs, c_cs, 0});
  if (plan != nullptr && RunPlan(*plan, a, b, c)) return;
  if (ViaSgemm(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
               c_bs, c_rs, c_cs)) {
    return;
  }
  Bf16GemmReference(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c,
                    c_bs, c_rs, c_cs);
}

// Whether b, one [k, n] matrix for the whole batch, is a frozen
// constant's (packed_weights.h).
bool FrozenOperand(int64_t batch, int64_t n, int64_t k, const void* b,
                   int64_t b_bs, int64_t b_rs, int64_t b_cs) {
  int64_t rows, cols, last, bytes;
  if ((batch > 1 && b_bs != 0) || n <= 0 || k <= 0 || b_rs < 0 || b_cs < 0 ||
      __builtin_mul_overflow(k - 1, b_rs, &rows) ||
      __builtin_mul_overflow(n - 1, b_cs, &cols) ||
      __builtin_add_overflow(rows, cols, &last) ||
      __builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, int64_t{sizeof(uint16_t)}, &bytes)) {
    return false;
  }
  return IsFrozen(b, bytes);
}

}  // namespace

void Bf16GemmReference(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (int64_t t = 0; t < batch; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          acc +=
              static_cast<double>(FromBf16(x[t * a_bs + i * a_rs + l * a_cs])) *
              FromBf16(y[t * b_bs + l * b_rs + j * b_cs]);
        }
        c[t * c_bs + i * c_rs + j * c_cs] = static_cast<float>(acc);
      }
    }
  }
}

bool Bf16GemmUsesOneDnn(int64_t batch, int64_t m, int64_t n, int64_t k,
                        int64_t a_bs, int64_t a_rs, int64_t a_cs, int64_t b_bs,
                        int64_t b_rs, int64_t b_cs, int64_t c_bs, int64_t c_rs,
                        int64_t c_cs) {
  return PlanFor({batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs,
                  c_rs, c_cs, 0}) != nullptr;
}

void Bf16Gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a,
              int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b,
              int64_t b_bs, int64_t b_rs, int64_t b_cs, float* c, int64_t c_bs,
              int64_t c_rs, int64_t c_cs) {
  struct Call {
    int64_t k;
    const uint16_t *a, *b;
    float* c;
    int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs;
    bool frozen;
  } call{k,
         static_cast<const uint16_t*>(a),
         static_cast<const uint16_t*>(b),
         c,
         a_bs,
         a_rs,
         a_cs,
         b_bs,
         b_rs,
         b_cs,
         c_bs,
         c_rs,
         c_cs,
         FrozenOperand(batch, n, k, b, b_bs, b_rs, b_cs)};
  // A result shared by the batch (stride 0) is written in order, on one
  // thread.
  onednn::ParallelProducts(
      batch, m, n, k, batch > 1 && c_bs == 0 ? 1 : onednn::Team(),
      [](void* ctx, const onednn::ProductPiece& p) {
        const Call& g = *static_cast<const Call*>(ctx);
        Product(p.mats, p.rows, p.cols, g.k,
                g.a + p.mat * g.a_bs + p.row * g.a_rs, g.a_bs, g.a_rs, g.a_cs,
                g.b + p.mat * g.b_bs + p.col * g.b_cs, g.b_bs, g.b_rs, g.b_cs,
                g.c + p.mat * g.c_bs + p.row * g.c_rs + p.col * g.c_cs, g.c_bs,
                g.c_rs, g.c_cs, g.frozen);
      },
      &call, onednn::kBf16PanelRows);
}

}  // namespace lathe
