#include "runtime/matmul_primitive.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "dnnl.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"

namespace lathe {
namespace onednn {
namespace {

// A geometry as a map key: the input dtype, batch, m, n, k, then a's, b's
// and c's (batch, row, column) strides, then 1 when b is frozen, else 0.
using Key = std::array<int64_t, 15>;

Key KeyOf(const ProductGeometry& g) {
  return {g.in,   g.batch, g.m,    g.n,    g.k,    g.a_bs, g.a_rs,    g.a_cs,
          g.b_bs, g.b_rs,  g.b_cs, g.c_bs, g.c_rs, g.c_cs, g.frozen_b};
}

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
  if (!Ok(dnnl_reorder_primitive_desc_create(&reorder, &plan->b_md, Engine(),
                                             &plan->packed_md, Engine(),
                                             Attributes()))) {
    return false;
  }
  const bool ok = Ok(dnnl_primitive_create(&plan->b_in, reorder));
  dnnl_primitive_desc_destroy(reorder);
  return ok;
}

// Builds the plan for `g`, for one thread; false when oneDNN does not take
// it.
bool BuildPlan(const ProductGeometry& g, Plan* plan) {
  OneThread one;
  if (Engine() == nullptr || g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0 ||
      (g.in != dnnl_f32 && g.in != dnnl_bf16)) {
    return false;
  }
  int na, nb, nc;
  dnnl_dims_t ad, as, bd, bs, cd, cs;
  if (!Dims(g.batch, g.m, g.k, g.a_bs, g.a_rs, g.a_cs, &na, ad, as) ||
      !Dims(g.batch, g.k, g.n, g.b_bs, g.b_rs, g.b_cs, &nb, bd, bs) ||
      !Dims(g.batch, g.m, g.n, g.c_bs, g.c_rs, g.c_cs, &nc, cd, cs) ||
      (g.batch > 1 && g.c_bs == 0)) {  // every batch writes its own c
    return false;
  }
  if (!Ok(dnnl_memory_desc_init_by_strides(&plan->a_md, na, ad, g.in, as)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->b_md, nb, bd, g.in, bs)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->c_md, nc, cd, dnnl_f32,
                                           cs))) {
    return false;
  }
  dnnl_memory_desc_t b_any;
  if (g.frozen_b && !Ok(dnnl_memory_desc_init_by_tag(&b_any, nb, bd, g.in,
                                                     dnnl_format_tag_any))) {
    return false;
  }
  dnnl_matmul_desc_t desc;
  if (!Ok(dnnl_matmul_desc_init(&desc, &plan->a_md,
                                g.frozen_b ? &b_any : &plan->b_md, nullptr,
                                &plan->c_md))) {
    return false;
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_primitive_desc_create(&pd, &desc, Attributes(), Engine(),
                                     nullptr))) {
    return false;
  }
  // oneDNN's reference matmul (what takes a layout no optimized kernel
  // does) is orders of magnitude slower than the callers' fallbacks.
  const char* impl = nullptr;
  bool ok =
      Ok(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl)) &&
      impl != nullptr && std::strncmp(impl, "ref", 3) != 0 &&
      (!g.frozen_b || BuildPacking(pd, plan)) &&
      Ok(dnnl_primitive_create(&plan->matmul, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

// The cached plan for a geometry, or null when oneDNN does not take it.
// Plans live as long as the process.
const Plan* PlanFor(const ProductGeometry& g) {
  static std::mutex* mu = new std::mutex();
  static auto* plans = new std::map<Key, std::unique_ptr<Plan>>();
  std::lock_guard<std::mutex> lock(*mu);
  const Key key = KeyOf(g);
  auto it = plans->find(key);
  if (it == plans->end()) {
    auto plan = std::make_unique<Plan>();
    if (!BuildPlan(g, plan.get())) plan.reset();
    it = plans->emplace(key, std::move(plan)).first;
  }
  return it->second.get();
}

}  // namespace

bool MatmulTakes(const ProductGeometry& g) { return PlanFor(g) != nullptr; }

bool RunMatmul(const ProductGeometry& g, const void* a, const void* b,
               float* c) {
  const Plan* p = PlanFor(g);
  dnnl_stream_t stream = Stream();
  if (p == nullptr || stream == nullptr) return false;
  dnnl_memory_t weights = p->b_in == nullptr
                              ? nullptr
                              : KeptPacking(b, p->b_md, p->packed_md, p->b_in);
  if (p->b_in != nullptr && weights == nullptr) return false;
  // b's own memory, where the plan reads it as it is.
  std::unique_ptr<Memory> bm;
  if (weights == nullptr) {
    bm = std::make_unique<Memory>(p->b_md, const_cast<void*>(b));
    weights = bm->m;
  }
  Memory am(p->a_md, const_cast<void*>(a));
  Memory cm(p->c_md, c);
  if (am.m == nullptr || weights == nullptr || cm.m == nullptr) return false;
  return Execute(stream, p->matmul,
                 {{DNNL_ARG_SRC, am.m},
                  {DNNL_ARG_WEIGHTS, weights},
                  {DNNL_ARG_DST, cm.m}}) &&
         Ok(dnnl_stream_wait(stream));
}

}  // namespace onednn

bool FrozenOperand(int64_t batch, int64_t n, int64_t k, const void* b,
                   int64_t b_bs, int64_t b_rs, int64_t b_cs,
                   int64_t elem_bytes) {
  int64_t rows, cols, last, bytes;
  if ((batch > 1 && b_bs != 0) || n <= 0 || k <= 0 || b_rs < 0 || b_cs < 0 ||
      __builtin_mul_overflow(k - 1, b_rs, &rows) ||
      __builtin_mul_overflow(n - 1, b_cs, &cols) ||
      __builtin_add_overflow(rows, cols, &last) ||
      __builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, elem_bytes, &bytes)) {
    return false;
  }
  return IsFrozen(b, bytes);
}

}  // namespace lathe
