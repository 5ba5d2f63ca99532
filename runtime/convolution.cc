#include "runtime/convolution.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dnnl.h"
#include "runtime/onednn.h"

namespace lathe {
namespace {

using onednn::Engine;
using onednn::Execute;
using onednn::Memory;
using onednn::Ok;
using onednn::Stream;

// The geometry array unpacked; spatial dims past s are size 1.
struct Geometry {
  int s = 0;
  int64_t groups = 1, n = 0, c = 0, o = 0;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  // Offsets and strides (N/O, C, spatial...) of x, w and out.
  int64_t x_off = 0, w_off = 0, o_off = 0;
  std::array<int64_t, 5> xs{}, ws{}, os{};
  int64_t flags = 0;

  explicit Geometry(const int64_t* g) {
    s = static_cast<int>(g[0]);
    groups = g[1];
    n = g[2];
    c = g[3];
    o = g[4];
    const int64_t* p = g + 5;
    for (auto* a : {&in, &k, &out, &stride, &pad, &dil}) {
      for (int d = 0; d < s; ++d) (*a)[d] = *p++;
    }
    for (auto [off, st] : {std::pair{&x_off, &xs}, std::pair{&w_off, &ws},
                           std::pair{&o_off, &os}}) {
      *off = *p++;
      for (int d = 0; d < 2 + s; ++d) (*st)[d] = *p++;
    }
    flags = *p++;
  }
  bool frozen_weights() const { return (flags & kSconvFrozenWeights) != 0; }
  bool Empty() const {
    int64_t e = n * c * o;
    for (int d = 0; d < s; ++d) e *= in[d] * k[d] * out[d];
    return e == 0;
  }
};

// ---- oneDNN ---------------------------------------------------------------

// A primitive and the reorders around it, for one geometry.
struct Plan {
  ~Plan() {
    for (dnnl_primitive_t p : {conv, x_in, w_in, o_out}) {
      if (p != nullptr) dnnl_primitive_destroy(p);
    }
  }
  dnnl_primitive_t conv = nullptr;
  dnnl_memory_desc_t x_user, w_user, o_user;  // the caller's layouts
  dnnl_memory_desc_t x_md, w_md, o_md;        // the primitive's
  dnnl_primitive_t x_in = nullptr, w_in = nullptr, o_out = nullptr;
};

// A primitive for the reorder from `from` to `to`, or null when they are
// the same layout; false when oneDNN cannot reorder them.
bool Reorder(const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
             dnnl_primitive_t* out) {
  *out = nullptr;
  if (dnnl_memory_desc_equal(&from, &to)) return true;
  dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_reorder_primitive_desc_create(&pd, &from, Engine(), &to,
                                             Engine(), nullptr))) {
    return false;
  }
  bool ok = Ok(dnnl_primitive_create(out, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

// Builds the plan for `g`; false when oneDNN does not take it.
bool BuildPlan(const Geometry& g, Plan* plan) {
  if (Engine() == nullptr || g.Empty()) return false;
  int nd = 2 + g.s;
  dnnl_dims_t xd, xst, wd, wst, od, ost;
  xd[0] = g.n, xd[1] = g.c, od[0] = g.n, od[1] = g.o;
  xst[0] = g.xs[0], xst[1] = g.xs[1], ost[0] = g.os[0], ost[1] = g.os[1];
  // Weights grouped: [G, O/G, C/G, k...].
  int64_t og = g.o / g.groups;
  wd[0] = g.groups, wd[1] = og, wd[2] = g.c / g.groups;
  wst[0] = g.ws[0] * og, wst[1] = g.ws[0], wst[2] = g.ws[1];
  dnnl_dims_t st, dl, pl, pr;
  for (int d = 0; d < g.s; ++d) {
    xd[2 + d] = g.in[d], xst[2 + d] = g.xs[2 + d];
    od[2 + d] = g.out[d], ost[2 + d] = g.os[2 + d];
    wd[3 + d] = g.k[d], wst[3 + d] = g.ws[2 + d];
    st[d] = g.stride[d];
    dl[d] = g.dil[d] - 1;
    pl[d] = g.pad[d];
    // The right padding that makes oneDNN's output size PyTorch's (it may
    // be negative where PyTorch's floor drops input columns).
    pr[d] = (g.out[d] - 1) * g.stride[d] + (g.k[d] - 1) * g.dil[d] + 1 -
            g.in[d] - g.pad[d];
  }
  if (!Ok(dnnl_memory_desc_init_by_strides(&plan->x_user, nd, xd, dnnl_f32,
                                           xst)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->w_user, nd + 1, wd, dnnl_f32,
                                           wst)) ||
      !Ok(dnnl_memory_desc_init_by_strides(&plan->o_user, nd, od, dnnl_f32,
                                           ost))) {
    return false;
  }
  dnnl_memory_desc_t xa, wa, oa;
  dnnl_memory_desc_init_by_tag(&xa, nd, xd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&wa, nd + 1, wd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&oa, nd, od, dnnl_f32, dnnl_format_tag_any);
  dnnl_convolution_desc_t cd;
  if (!Ok(dnnl_dilated_convolution_forward_desc_init(
          &cd, dnnl_forward_inference, dnnl_convolution_direct, &xa, &wa,
          nullptr, &oa, st, dl, pl, pr))) {
    return false;
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_primitive_desc_create(&pd, &cd, nullptr, Engine(), nullptr))) {
    return false;
  }
  plan->x_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  plan->w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  plan->o_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  bool ok = Ok(dnnl_primitive_create(&plan->conv, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok && Reorder(plan->x_user, plan->x_md, &plan->x_in) &&
         Reorder(plan->w_user, plan->w_md, &plan->w_in) &&
         Reorder(plan->o_md, plan->o_user, &plan->o_out);
}

// The cached plan for a geometry, or null when oneDNN does not take it.
// Plans live as long as the process.
const Plan* PlanFor(const int64_t* geometry, const Geometry& g) {
  static std::mutex* mu = new std::mutex();
  static auto* plans =
      new std::map<std::vector<int64_t>, std::unique_ptr<Plan>>();
  std::vector<int64_t> key(geometry, geometry + SconvGeometrySize(g.s));
  std::lock_guard<std::mutex> lock(*mu);
  auto it = plans->find(key);
  if (it == plans->end()) {
    auto plan = std::make_unique<Plan>();
    if (!BuildPlan(g, plan.get())) plan.reset();
    it = plans->emplace(std::move(key), std::move(plan)).first;
  }
  return it->second.get();
}

// Frozen weights packed into a primitive's layout: by the weights' address,
// one entry per layout asked for (plans for other batch or image sizes
// mostly ask for the same one). An entry lives until its weights' owner
// forgets them.
struct Packed {
  dnnl_memory_desc_t md;           // the layout
  std::unique_ptr<Memory> memory;  // oneDNN's own buffer, in that layout
};
std::mutex& PackedMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::map<const float*, std::vector<Packed>>& PackedWeights() {
  static auto* packed = new std::map<const float*, std::vector<Packed>>();
  return *packed;
}

// The plan's weights from frozen `w`, packed at the first call and kept;
// null when oneDNN fails.
dnnl_memory_t PackedFor(const Plan& p, const float* w) {
  std::lock_guard<std::mutex> lock(PackedMutex());
  std::vector<Packed>& kept = PackedWeights()[w];
  for (const Packed& k : kept) {
    if (dnnl_memory_desc_equal(&k.md, &p.w_md)) return k.memory->m;
  }
  dnnl_stream_t stream = Stream();
  if (stream == nullptr) return nullptr;
  Memory wu(p.w_user, const_cast<float*>(w));
  auto wm = std::make_unique<Memory>(p.w_md, DNNL_MEMORY_ALLOCATE);
  if (wu.m == nullptr || wm->m == nullptr ||
      !Execute(stream, p.w_in, {{DNNL_ARG_FROM, wu.m}, {DNNL_ARG_TO, wm->m}}) ||
      !Ok(dnnl_stream_wait(stream))) {
    return nullptr;
  }
  dnnl_memory_t m = wm->m;
  kept.push_back(Packed{p.w_md, std::move(wm)});
  return m;
}

// Runs the plan; false when oneDNN fails (nothing usable was written).
// `frozen`: the weights are a frozen constant (packed once).
bool RunPlan(const Plan& p, const float* x, const float* w, float* out,
             bool frozen) {
  dnnl_stream_t stream = Stream();
  if (stream == nullptr) return false;
  const bool pack_once = frozen && p.w_in != nullptr;
  dnnl_memory_t packed = pack_once ? PackedFor(p, w) : nullptr;
  if (pack_once && packed == nullptr) return false;
  Memory xu(p.x_user, const_cast<float*>(x));
  Memory wu(p.w_user, const_cast<float*>(w));
  Memory ou(p.o_user, out);
  Memory xm(p.x_md, p.x_in ? DNNL_MEMORY_ALLOCATE : const_cast<float*>(x));
  // Packed weights need no memory over `w` in the primitive's layout (one
  // over the caller's buffer would have oneDNN zero its padding there).
  Memory wm(p.w_md, pack_once ? nullptr
                    : p.w_in  ? DNNL_MEMORY_ALLOCATE
                              : const_cast<float*>(w));
  Memory om(p.o_md, p.o_out ? DNNL_MEMORY_ALLOCATE : out);
  for (const Memory* m : {&xu, &wu, &ou, &xm, &om}) {
    if (m->m == nullptr) return false;
  }
  if (!pack_once && wm.m == nullptr) return false;
  bool ok = true;
  if (p.x_in) {
    ok = ok &&
         Execute(stream, p.x_in, {{DNNL_ARG_FROM, xu.m}, {DNNL_ARG_TO, xm.m}});
  }
  if (p.w_in && !pack_once) {
    ok = ok &&
         Execute(stream, p.w_in, {{DNNL_ARG_FROM, wu.m}, {DNNL_ARG_TO, wm.m}});
  }
  ok = ok && Execute(stream, p.conv,
                     {{DNNL_ARG_SRC, xm.m},
                      {DNNL_ARG_WEIGHTS, pack_once ? packed : wm.m},
                      {DNNL_ARG_DST, om.m}});
  if (p.o_out) {
    ok = ok &&
         Execute(stream, p.o_out, {{DNNL_ARG_FROM, om.m}, {DNNL_ARG_TO, ou.m}});
  }
  return ok && Ok(dnnl_stream_wait(stream));
}

}  // namespace

void SconvReference(const int64_t* geometry, const float* x, const float* w,
                    float* out) {
  Geometry g(geometry);
  x += g.x_off, w += g.w_off, out += g.o_off;
  int64_t og = g.o / g.groups, cg = g.c / g.groups;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oc = 0; oc < g.o; ++oc) {
      int64_t c0 = oc / og * cg;
      for (int64_t a = 0; a < g.out[0]; ++a) {
        for (int64_t b = 0; b < g.out[1]; ++b) {
          for (int64_t e = 0; e < g.out[2]; ++e) {
            double acc = 0;
            for (int64_t ic = 0; ic < cg; ++ic) {
              for (int64_t i = 0; i < g.k[0]; ++i) {
                int64_t p = a * g.stride[0] - g.pad[0] + i * g.dil[0];
                if (p < 0 || p >= g.in[0]) continue;
                for (int64_t j = 0; j < g.k[1]; ++j) {
                  int64_t q = b * g.stride[1] - g.pad[1] + j * g.dil[1];
                  if (q < 0 || q >= g.in[1]) continue;
                  for (int64_t l = 0; l < g.k[2]; ++l) {
                    int64_t r = e * g.stride[2] - g.pad[2] + l * g.dil[2];
                    if (r < 0 || r >= g.in[2]) continue;
                    acc += static_cast<double>(
                               x[n * g.xs[0] + (c0 + ic) * g.xs[1] +
                                 p * g.xs[2] + q * g.xs[3] + r * g.xs[4]]) *
                           w[oc * g.ws[0] + ic * g.ws[1] + i * g.ws[2] +
                             j * g.ws[3] + l * g.ws[4]];
                  }
                }
              }
            }
            out[n * g.os[0] + oc * g.os[1] + a * g.os[2] + b * g.os[3] +
                e * g.os[4]] = static_cast<float>(acc);
          }
        }
      }
    }
  }
}

bool SconvUsesOneDnn(const int64_t* geometry) {
  return PlanFor(geometry, Geometry(geometry)) != nullptr;
}

void Sconv(const int64_t* geometry, const float* x, const float* w,
           float* out) {
  Geometry g(geometry);
  const Plan* plan = PlanFor(geometry, g);
  if (plan != nullptr && RunPlan(*plan, x + g.x_off, w + g.w_off, out + g.o_off,
                                 g.frozen_weights())) {
    return;
  }
  SconvReference(geometry, x, w, out);
}

void ForgetFrozenWeights(const void* data, int64_t bytes) {
  const char* lo = static_cast<const char*>(data);
  std::lock_guard<std::mutex> lock(PackedMutex());
  auto& packed = PackedWeights();
  for (auto it = packed.begin(); it != packed.end();) {
    const char* w = reinterpret_cast<const char*>(it->first);
    it = w >= lo && w < lo + bytes ? packed.erase(it) : std::next(it);
  }
}

int64_t FrozenWeightsKept() {
  std::lock_guard<std::mutex> lock(PackedMutex());
  int64_t n = 0;
  for (const auto& [w, kept] : PackedWeights()) {
    n += static_cast<int64_t>(kept.size());
  }
  return n;
}

}  // namespace lathe
