#include "runtime/convolution.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dnnl.h"
#include "runtime/onednn.h"
#include "runtime/packed_weights.h"

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
  // The geometry array again (SconvGeometrySize(s) entries).
  std::vector<int64_t> Encode() const {
    std::vector<int64_t> g = {s, groups, n, c, o};
    for (const auto* a : {&in, &k, &out, &stride, &pad, &dil}) {
      g.insert(g.end(), a->begin(), a->begin() + s);
    }
    for (auto [off, st] : {std::pair{x_off, &xs}, std::pair{w_off, &ws},
                           std::pair{o_off, &os}}) {
      g.push_back(off);
      g.insert(g.end(), st->begin(), st->begin() + 2 + s);
    }
    g.push_back(flags);
    return g;
  }
  bool frozen_weights() const { return (flags & kSconvFrozenWeights) != 0; }
  bool winograd() const { return (flags & kSconvWinograd) != 0; }
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
    for (const Slice& s : w_slices) dnnl_primitive_destroy(s.reorder);
  }
  dnnl_primitive_t conv = nullptr;
  bool winograd = false;  // conv is oneDNN's Winograd kernel
  dnnl_memory_desc_t x_user, w_user, o_user;  // the caller's layouts
  dnnl_memory_desc_t x_md, w_md, o_md;        // the primitive's
  dnnl_primitive_t x_in = nullptr, w_in = nullptr, o_out = nullptr;
  // w_in in slices of output channels, for the pool (empty: w_in whole).
  struct Slice {
    dnnl_memory_desc_t from, to;  // parts of w_user and w_md
    dnnl_primitive_t reorder;
  };
  std::vector<Slice> w_slices;
};

// A primitive for the reorder from `from` to `to`, or null when they are
// the same layout; false when oneDNN cannot reorder them.
bool Reorder(const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
             dnnl_primitive_t* out) {
  *out = nullptr;
  if (dnnl_memory_desc_equal(&from, &to)) return true;
  dnnl_primitive_desc_t pd = nullptr;
  if (!Ok(dnnl_reorder_primitive_desc_create(&pd, &from, Engine(), &to,
                                             Engine(), onednn::Attributes()))) {
    return false;
  }
  bool ok = Ok(dnnl_primitive_create(out, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

// Adds the weights' reorder in slices of output channels to `plan`, about
// kPiecesPerThread per thread of `team`: slices at the blocks of the
// primitive's layout, where it has no padding (a slice's reorder would not
// zero it); none where it cannot or oneDNN refuses a slice.
void SliceWeights(Plan* plan, int team) {
  const dnnl_memory_desc_t& w = plan->w_md;
  if (plan->w_in == nullptr || w.format_kind != dnnl_blocked) return;
  for (int d = 0; d < w.ndims; ++d) {
    if (w.padded_dims[d] != w.dims[d]) return;
  }
  int64_t block = 1;  // output channels (dim 1: [G, O/G, C/G, k...]) a block
  for (int b = 0; b < w.format_desc.blocking.inner_nblks; ++b) {
    if (w.format_desc.blocking.inner_idxs[b] == 1) {
      block *= w.format_desc.blocking.inner_blks[b];
    }
  }
  const int64_t blocks = w.dims[1] / block;
  const int64_t want = team * onednn::kPiecesPerThread;
  if (w.dims[1] % block != 0 || blocks < 2 || want < 2) return;
  const int64_t per = (blocks + want - 1) / want * block;
  for (int64_t at = 0; at < w.dims[1]; at += per) {
    dnnl_dims_t dims, offsets{};
    for (int d = 0; d < w.ndims; ++d) dims[d] = w.dims[d];
    dims[1] = std::min(per, w.dims[1] - at);
    offsets[1] = at;
    Plan::Slice s{};
    if (!Ok(dnnl_memory_desc_init_submemory(&s.from, &plan->w_user, dims,
                                            offsets)) ||
        !Ok(dnnl_memory_desc_init_submemory(&s.to, &w, dims, offsets)) ||
        !Reorder(s.from, s.to, &s.reorder) || s.reorder == nullptr) {
      for (const Plan::Slice& made : plan->w_slices) {
        dnnl_primitive_destroy(made.reorder);
      }
      plan->w_slices.clear();  // w_in whole
      return;
    }
    plan->w_slices.push_back(s);
  }
}

// Builds the plan for `g`, for one thread; false when oneDNN does not take
// it.
bool BuildPlan(const Geometry& g, Plan* plan) {
  if (Engine() == nullptr || onednn::Attributes() == nullptr || g.Empty()) {
    return false;
  }
  const int team = onednn::Team();
  onednn::OneThread one;
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
  // Winograd's algorithm where asked and oneDNN has it, else the direct.
  dnnl_primitive_desc_t pd = nullptr;
  for (dnnl_alg_kind_t alg :
       {g.winograd() ? dnnl_convolution_winograd : dnnl_convolution_direct,
        dnnl_convolution_direct}) {
    dnnl_convolution_desc_t cd;
    if (Ok(dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_inference, alg, &xa, &wa, nullptr, &oa, st, dl,
            pl, pr)) &&
        Ok(dnnl_primitive_desc_create(&pd, &cd, onednn::Attributes(), Engine(),
                                      nullptr))) {
      plan->winograd = alg == dnnl_convolution_winograd;
      break;
    }
    pd = nullptr;
  }
  if (pd == nullptr) return false;
  plan->x_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  plan->w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  plan->o_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  bool ok = Ok(dnnl_primitive_create(&plan->conv, pd));
  dnnl_primitive_desc_destroy(pd);
  return ok && Reorder(plan->x_user, plan->x_md, &plan->x_in) &&
         Reorder(plan->w_user, plan->w_md, &plan->w_in) &&
         Reorder(plan->o_md, plan->o_user, &plan->o_out) &&
         (SliceWeights(plan, team), true);
}

// The cached plan for a geometry, or null when oneDNN does not take it.
// Plans live as long as the process.
const Plan* PlanFor(const Geometry& g) {
  static std::mutex* mu = new std::mutex();
  static auto* plans =
      new std::map<std::vector<int64_t>, std::unique_ptr<Plan>>();
  std::vector<int64_t> key = g.Encode();
  std::lock_guard<std::mutex> lock(*mu);
  auto it = plans->find(key);
  if (it == plans->end()) {
    auto plan = std::make_unique<Plan>();
    if (!BuildPlan(g, plan.get())) {
      plan = std::make_unique<Plan>();
      // A Winograd plan that failed past its primitive descriptor (its
      // weights' reorder into the Winograd format): the direct one.
      Geometry direct = g;
      direct.flags &= ~kSconvWinograd;
      if (!g.winograd() || !BuildPlan(direct, plan.get())) plan.reset();
    }
    it = plans->emplace(std::move(key), std::move(plan)).first;
  }
  return it->second.get();
}

// Runs the plan on this thread; false when oneDNN fails (nothing usable was
// written). `frozen`: the weights are a frozen constant (packed once).
// `given`: the weights already in a primitive's layout, `given_md` (used
// when it is the plan's), or null.
bool RunPlan(const Plan& p, const float* x, const float* w, float* out,
             bool frozen, dnnl_memory_t given,
             const dnnl_memory_desc_t* given_md) {
  dnnl_stream_t stream = Stream();
  if (stream == nullptr) return false;
  const bool pack_once = frozen && p.w_in != nullptr;
  dnnl_memory_t packed =
      pack_once ? onednn::KeptPacking(w, p.w_user, p.w_md, p.w_in) : nullptr;
  if (pack_once && packed == nullptr) return false;
  if (!pack_once && p.w_in != nullptr && given != nullptr &&
      dnnl_memory_desc_equal(given_md, &p.w_md)) {
    packed = given;
  }
  Memory xu(p.x_user, const_cast<float*>(x));
  Memory wu(p.w_user, const_cast<float*>(w));
  Memory ou(p.o_user, out);
  // The layouts the primitive needs are in this thread's buffers (no
  // allocation and no new page on a call like the last).
  auto buffer = [](onednn::BufferSlot slot, const dnnl_memory_desc_t& md) {
    return onednn::ThreadBuffer(slot, dnnl_memory_desc_get_size(&md));
  };
  void* x_data =
      p.x_in ? buffer(onednn::kSource, p.x_md) : const_cast<float*>(x);
  // Packed weights need no memory over `w` in the primitive's layout (one
  // over the caller's buffer would have oneDNN zero its padding there).
  void* w_data = packed != nullptr ? nullptr
                 : p.w_in          ? buffer(onednn::kWeights, p.w_md)
                                   : const_cast<float*>(w);
  void* o_data = p.o_out ? buffer(onednn::kDestination, p.o_md) : out;
  if (x_data == nullptr || o_data == nullptr ||
      (packed == nullptr && w_data == nullptr)) {
    return false;  // the host memory limit refused a buffer
  }
  Memory xm(p.x_md, x_data);
  Memory wm(p.w_md, w_data);
  Memory om(p.o_md, o_data);
  for (const Memory* m : {&xu, &wu, &ou, &xm, &om}) {
    if (m->m == nullptr) return false;
  }
  if (packed == nullptr && wm.m == nullptr) return false;
  bool ok = true;
  if (p.x_in) {
    ok = ok &&
         Execute(stream, p.x_in, {{DNNL_ARG_FROM, xu.m}, {DNNL_ARG_TO, xm.m}});
  }
  if (p.w_in && packed == nullptr) {
    ok = ok &&
         Execute(stream, p.w_in, {{DNNL_ARG_FROM, wu.m}, {DNNL_ARG_TO, wm.m}});
  }
  ok = ok && Execute(stream, p.conv,
                     {{DNNL_ARG_SRC, xm.m},
                      {DNNL_ARG_WEIGHTS, packed != nullptr ? packed : wm.m},
                      {DNNL_ARG_DST, om.m}});
  if (p.o_out) {
    ok = ok &&
         Execute(stream, p.o_out, {{DNNL_ARG_FROM, om.m}, {DNNL_ARG_TO, ou.m}});
  }
  return ok && Ok(dnnl_stream_wait(stream));
}

// Output pixels below which a slice of images is too few rows for the
// library's blocking (Split).
constexpr int64_t kFewPixels = 64;

// A piece of a convolution: its geometry (offsets 0), where its part of x,
// w and out starts, and its plan.
struct Piece {
  Geometry g;
  int64_t x_at = 0, w_at = 0, o_at = 0;
  const Plan* plan = nullptr;
  // A slice of whole images: the first, and how many (0: another cut).
  int64_t image = 0, images = 0;
};

// The span of one image of an operand (channels `ch`, spatial sizes `sp`,
// strides `st`): the batch stride a dense tensor of it has, which a piece
// of one image takes so that oneDNN sees its layout as dense.
int64_t ImageSpan(const std::array<int64_t, 5>& st, int64_t ch,
                  const std::array<int64_t, 3>& sp, int s) {
  int64_t span = ch * st[1];
  for (int d = 0; d < s; ++d) span = std::max(span, sp[d] * st[2 + d]);
  return span;
}

// Each image of `g` in `slices` slices of its output's first spatial dim
// (each slice's input rows with their halo, the padding where a slice has
// it), appended to `pieces`; false when a slice would read only padding.
bool RowSlices(const Geometry& g, const Piece& whole, int64_t slices,
               std::vector<Piece>* pieces) {
  const int64_t per = (g.out[0] + slices - 1) / slices;
  for (int64_t b = 0; b < g.n; ++b) {
    for (int64_t r0 = 0; r0 < g.out[0]; r0 += per) {
      const int64_t r1 = std::min(g.out[0], r0 + per);
      const int64_t lo = r0 * g.stride[0] - g.pad[0];
      const int64_t hi =
          (r1 - 1) * g.stride[0] - g.pad[0] + (g.k[0] - 1) * g.dil[0] + 1;
      const int64_t in_lo = std::max<int64_t>(0, lo);
      const int64_t in_hi = std::min(g.in[0], hi);
      if (in_hi <= in_lo) return false;
      Piece& p = pieces->emplace_back(whole);
      p.g.n = 1;
      p.g.out[0] = r1 - r0;
      p.g.in[0] = in_hi - in_lo;
      p.g.pad[0] = in_lo - lo;
      p.g.xs[0] = ImageSpan(p.g.xs, p.g.c, p.g.in, p.g.s);
      p.g.os[0] = ImageSpan(p.g.os, p.g.o, p.g.out, p.g.s);
      p.x_at = b * g.xs[0] + in_lo * g.xs[2];
      p.o_at = b * g.os[0] + r0 * g.os[2];
    }
  }
  return true;
}

// The pieces of `g` for `team` threads (onednn.h), about kPiecesPerThread
// per thread: slices of output channels when the weights (one group) are
// larger than the input and a slice of images would have fewer than
// kFewPixels output pixels, else slices of the batch when it has that many
// images, else each image in slices of its output rows, else (rows that
// would read only padding, or one output row) an image a piece, or for one
// image of one group slices of its output channels; one piece for small
// work, a team of 1, or what none of these splits. A slice of images or
// rows of a channels-last result is dense, so oneDNN writes it in place; a
// slice of channels goes through a reorder.
//
// With an `epilogue` to run, a batch of at least two images and one per
// thread is cut into slices of images, each no more than
// kEpiloguePieceBytes of output (at least an image); a smaller one is cut
// as without (its epilogue runs after).
std::vector<Piece> Split(const Geometry& g, int team, bool epilogue = false) {
  Piece whole{g};
  whole.g.x_off = whole.g.w_off = whole.g.o_off = 0;
  double work = static_cast<double>(g.n) * g.o * (g.c / g.groups);
  for (int d = 0; d < g.s; ++d) work *= static_cast<double>(g.out[d]) * g.k[d];
  const int64_t want = team * onednn::kPiecesPerThread;
  auto images = [&](int64_t per) {
    std::vector<Piece> pieces;
    for (int64_t at = 0; at < g.n; at += per) {
      Piece& p = pieces.emplace_back(whole);
      p.g.n = std::min(per, g.n - at);
      p.x_at = at * g.xs[0];
      p.o_at = at * g.os[0];
      p.image = at;
      p.images = p.g.n;
    }
    return pieces;
  };
  // Slices of output channels: each reads all of x and its part of w.
  auto channels = [&]() {
    std::vector<Piece> pieces;
    const int64_t per = std::max<int64_t>(16, (g.o / want + 15) / 16 * 16);
    for (int64_t at = 0; at < g.o; at += per) {
      Piece& p = pieces.emplace_back(whole);
      p.g.o = std::min(per, g.o - at);
      p.w_at = at * g.ws[0];
      p.o_at = at * g.os[1];
    }
    return pieces;
  };
  const bool threaded = team > 1 && work >= onednn::kThreadedWork;
  // Weights larger than the input, on images so small that a slice of
  // them gives the library few output pixels to block over (ResNet-18's
  // last stage at 112x112: 9.4 MB of weights against 0.26 MB of 4x4
  // images), are read once in slices of output channels rather than whole
  // by every slice of images: 2.5 ms of that model's 21. At 7x7 (its 224x224
  // stage) slices of 128 channels ran 13% slower than slices of images.
  int64_t x_elems = g.n * g.c, w_elems = g.o * (g.c / g.groups);
  int64_t pixels = (g.n + want - 1) / want;  // a slice of images' rows
  for (int d = 0; d < g.s; ++d) {
    x_elems *= g.in[d];
    w_elems *= g.k[d];
    pixels *= g.out[d];
  }
  if (threaded && g.groups == 1 && g.o >= 32 && w_elems > x_elems &&
      pixels < kFewPixels) {
    return channels();
  }
  if (epilogue && g.n >= std::max(team, 2)) {
    int64_t image_bytes = g.o * static_cast<int64_t>(sizeof(float));
    for (int d = 0; d < g.s; ++d) image_bytes *= g.out[d];
    const int64_t fit =
        image_bytes > 0
            ? std::max<int64_t>(1, kEpiloguePieceBytes / image_bytes)
            : g.n;
    return images(std::min(fit, (g.n + want - 1) / want));
  }
  if (!threaded) return {whole};
  std::vector<Piece> pieces;
  if (g.n < want && g.out[0] >= 2 &&
      RowSlices(g, whole, (want + g.n - 1) / g.n, &pieces)) {
    return pieces;
  }
  // Slices of images, an image a piece under `want` images.
  if (g.n >= 2) return images((g.n + want - 1) / want);
  pieces.clear();
  if (g.groups == 1 && g.o >= 32) return channels();
  return {whole};
}

// `g`'s pieces for the team (Split) with their plans, or the whole as one
// piece where oneDNN does not take a piece; none where it does not take the
// whole either.
std::vector<Piece> PlannedPieces(const Geometry& g, bool epilogue = false) {
  std::vector<Piece> pieces = Split(g, onednn::Team(), epilogue);
  for (Piece& p : pieces) {
    p.plan = PlanFor(p.g);
    if (p.plan == nullptr) {  // oneDNN may still take the whole
      pieces = Split(g, 1);
      pieces[0].plan = PlanFor(pieces[0].g);
      if (pieces[0].plan == nullptr) return {};
      break;
    }
  }
  return pieces;
}

// Reorders `w` into `to` (in p.w_md's layout), its slices on the pool;
// false when oneDNN fails.
bool ReorderWeights(const Plan& p, const float* w, dnnl_memory_t to) {
  void* data = nullptr;
  if (!Ok(dnnl_memory_get_data_handle(to, &data))) return false;
  struct Call {
    const Plan& p;
    const float* w;
    void* to;
    std::atomic<bool> failed{false};
  } call{p, w, data};
  const bool whole = p.w_slices.empty();
  onednn::ParallelPieces(
      whole ? 1 : static_cast<int64_t>(p.w_slices.size()), onednn::Team(),
      [](void* ctx, int64_t i) {
        Call& c = *static_cast<Call*>(ctx);
        const bool whole = c.p.w_slices.empty();
        Memory from(whole ? c.p.w_user : c.p.w_slices[i].from,
                    const_cast<float*>(c.w));
        Memory to(whole ? c.p.w_md : c.p.w_slices[i].to, c.to);
        dnnl_stream_t stream = Stream();
        if (stream == nullptr || from.m == nullptr || to.m == nullptr ||
            !Execute(stream, whole ? c.p.w_in : c.p.w_slices[i].reorder,
                     {{DNNL_ARG_FROM, from.m}, {DNNL_ARG_TO, to.m}}) ||
            !Ok(dnnl_stream_wait(stream))) {
          c.failed.store(true, std::memory_order_relaxed);
        }
      },
      &call);
  return !call.failed.load(std::memory_order_relaxed);
}

// Runs `g`'s convolution through oneDNN, its pieces on the runtime's pool,
// and the epilogue (when not null) over each slice of images on the thread
// that wrote it; false when oneDNN does not take a piece or fails (the
// caller runs the reference over the whole output, and the epilogue over
// every image again: the scheduler fuses only epilogues that may run
// twice). `*ran_epilogue`: whether every image's epilogue ran.
bool RunOneDnn(const Geometry& g, const float* x, const float* w, float* out,
               SconvEpilogue epilogue, void* epilogue_ctx, bool* ran_epilogue) {
  *ran_epilogue = false;
  std::vector<Piece> pieces = PlannedPieces(g, epilogue != nullptr);
  if (pieces.empty()) return false;
  // Each slice of images runs its epilogue; other cuts leave it to Sconv.
  const bool by_images =
      epilogue != nullptr &&
      std::all_of(pieces.begin(), pieces.end(),
                  [](const Piece& p) { return p.images > 0; });
  // Weights that every piece would reorder into the same layout are
  // reordered once, here.
  const Plan& first = *pieces[0].plan;
  const bool shared =
      std::all_of(pieces.begin(), pieces.end(),
                  [&](const Piece& p) { return p.w_at == 0 && p.g.o == g.o; });
  std::unique_ptr<Memory> weights;
  if (pieces.size() > 1 && shared && !g.frozen_weights() &&
      first.w_in != nullptr) {
    void* data = onednn::ThreadBuffer(onednn::kSharedWeights,
                                      dnnl_memory_desc_get_size(&first.w_md));
    if (data != nullptr) weights = std::make_unique<Memory>(first.w_md, data);
    if (weights == nullptr || weights->m == nullptr ||
        !ReorderWeights(first, w, weights->m)) {
      weights.reset();  // each piece reorders its own
    }
  }
  struct Call {
    const std::vector<Piece>& pieces;
    const float *x, *w;
    float* out;
    bool frozen;
    dnnl_memory_t weights;
    const dnnl_memory_desc_t* weights_md;
    SconvEpilogue epilogue;  // null: none, or not by slices of images
    void* epilogue_ctx;
    std::atomic<bool> failed{false};
  } call{pieces,
         x,
         w,
         out,
         g.frozen_weights(),
         weights ? weights->m : nullptr,
         &first.w_md,
         by_images ? epilogue : nullptr,
         epilogue_ctx};
  onednn::ParallelPieces(
      static_cast<int64_t>(pieces.size()), onednn::Team(),
      [](void* ctx, int64_t i) {
        Call& c = *static_cast<Call*>(ctx);
        const Piece& p = c.pieces[i];
        if (!RunPlan(*p.plan, c.x + p.x_at, c.w + p.w_at, c.out + p.o_at,
                     c.frozen, c.weights, c.weights_md)) {
          c.failed.store(true, std::memory_order_relaxed);
          return;
        }
        if (c.epilogue == nullptr) return;
        for (int64_t n = p.image; n < p.image + p.images; ++n) {
          c.epilogue(c.epilogue_ctx, n);
        }
      },
      &call);
  if (call.failed.load(std::memory_order_relaxed)) return false;
  *ran_epilogue = by_images;
  return true;
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
  return !PlannedPieces(Geometry(geometry)).empty();
}

bool SconvUsesWinograd(const int64_t* geometry) {
  const std::vector<Piece> pieces = PlannedPieces(Geometry(geometry));
  return !pieces.empty() &&
         std::all_of(pieces.begin(), pieces.end(),
                     [](const Piece& p) { return p.plan->winograd; });
}

void Sconv(const int64_t* geometry, const float* x, const float* w, float* out,
           SconvEpilogue epilogue, void* ctx) {
  Geometry g(geometry);
  bool ran_epilogue = false;
  if (!RunOneDnn(g, x + g.x_off, w + g.w_off, out + g.o_off, epilogue, ctx,
                 &ran_epilogue)) {
    SconvReference(geometry, x, w, out);
  }
  if (epilogue == nullptr || ran_epilogue) return;
  // The epilogues after: an image per pool thread when there are as many,
  // else one after the other here (each then on the team's threads).
  const int team = onednn::Team();
  if (team > 1 && g.n >= team) {
    onednn::ParallelPieces(g.n, team, epilogue, ctx);
    return;
  }
  for (int64_t n = 0; n < g.n; ++n) epilogue(ctx, n);
}

}  // namespace lathe
