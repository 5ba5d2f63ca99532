#include "codegen/lower/buffer_layouts.h"

#include <functional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codegen/lower/call.h"
#include "ir/alias_info.h"
#include "ir/known_ops.h"
#include "ir/ops_util.h"
#include "ir/output_layouts.h"

namespace lathe::codegen::lower {
namespace {

using Key = std::pair<const ir::Node*, int>;

// The tensor meta of element `element` of `v` (-1: v itself), or null.
const ir::TensorMeta* TensorAt(const ir::ValueMeta& v, int element) {
  const ir::ValueMeta* e = &v;
  if (element >= 0) {
    if (v.kind != ir::ValueMeta::Kind::kTuple ||
        element >= static_cast<int>(v.elements.size())) {
      return nullptr;
    }
    e = &v.elements[element];
  }
  return e->kind == ir::ValueMeta::Kind::kTensor ? &e->tensor : nullptr;
}

bool IsGetitem(const ir::Node& n) {
  return n.op() != nullptr && n.op() == ir::Known().getitem &&
         n.args().size() == 2 && n.args()[0].kind == ir::Arg::Kind::kNode &&
         n.args()[1].kind == ir::Arg::Kind::kInt;
}

// A getitem's (tuple, element); anything else's (itself, -1).
Key Producer(const ir::Node* n) {
  if (IsGetitem(*n)) {
    return {n->args()[0].node, static_cast<int>(n->args()[1].i)};
  }
  return {n, -1};
}

bool ChannelsLastRank(const ir::TensorMeta& m) {
  return m.sizes.size() == 4 || m.sizes.size() == 5;
}

// An f32 convolution the library computes (TransposedOnLibrary for a
// transposed one), of a 4-d or 5-d result: where channels-last values
// start.
bool IsLibraryConvolution(const ir::Node& n, const ir::TensorMeta& m) {
  if (n.op() == nullptr || n.op()->target != "aten.convolution.default" ||
      m.dtype != DType::kFloat32 || !ChannelsLastRank(m)) {
    return false;
  }
  absl::StatusOr<bool> transposed = Call(n).Bool("transposed");
  return transposed.ok() && (!*transposed || TransposedOnLibrary(n));
}

// An in-place or out= call that writes its target through the target's own
// buffer and strides (the lowering's StoreThroughTwin), returning it.
bool WritesThroughBuffer(const ir::Node& n) {
  const ir::OpDef* op = n.op();
  return op != nullptr &&
         (op->HasTag(ir::OpTag::kInplace) || op->HasTag(ir::OpTag::kOut)) &&
         !op->HasTag(ir::OpTag::kView) && !ir::MutatesMetadata(n);
}

}  // namespace

bool TransposedOnLibrary(const ir::Node& n) {
  constexpr double kSpreadRatio = 4;
  const Call c(n);
  const ir::Node* weight = c.NodeAt(1);
  if (weight == nullptr ||
      weight->meta().kind != ir::ValueMeta::Kind::kTensor) {
    return false;
  }
  const std::vector<symbolic::Expr>& w = weight->meta().tensor.sizes;
  absl::StatusOr<int64_t> groups = c.Int("groups");
  absl::StatusOr<std::optional<std::vector<int64_t>>> stride =
      c.IntList(c.Index("stride"));
  if (w.size() < 3 || !groups.ok() || !stride.ok() ||
      w[0].kind() != symbolic::ExprKind::kInteger ||
      w[1].kind() != symbolic::ExprKind::kInteger) {
    return false;
  }
  std::vector<int64_t> strides = stride->value_or(std::vector<int64_t>{1});
  if (strides.size() == 1) strides.resize(w.size() - 2, strides[0]);
  double s = 1;
  for (int64_t st : strides) s *= static_cast<double>(st);
  const double c_in = static_cast<double>(w[0].int_value());
  const double c_out = static_cast<double>(w[1].int_value() * *groups);
  return c_in * s <= kSpreadRatio * (c_in + c_out * s);
}

BufferLayouts::BufferLayouts(const ir::Graph& graph, const MetaFn& meta) {
  // Storages seen by more than their producer (views and aliases, which
  // read the storage through their own metas) or by the caller. An
  // in-place write and a getitem go through the producer's buffer.
  absl::flat_hash_map<ir::StorageId, int> holders;
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::Node::Kind::kOutput || IsGetitem(*node) ||
        WritesThroughBuffer(*node)) {
      continue;
    }
    for (ir::StorageId s : meta(node.get()).Storages()) ++holders[s];
  }
  std::function<void(const ir::Arg&)> returned = [&](const ir::Arg& a) {
    if (a.kind == ir::Arg::Kind::kList) {
      for (const ir::Arg& e : a.list) returned(e);
    } else if (a.kind == ir::Arg::Kind::kNode) {
      for (ir::StorageId s : meta(a.node).Storages()) holders[s] += 2;
    }
  };
  for (const ir::Arg& a : graph.output()->args()) returned(a);
  auto seen_only_by_producer = [&](const ir::TensorMeta& m) {
    if (m.storage == ir::kUnknownStorage) return false;
    auto it = holders.find(m.storage);
    return it != holders.end() && it->second == 1;
  };

  // Preferred: a library convolution's result, and a value of the same
  // rank computed from a preferred one.
  absl::flat_hash_set<Key> preferred;
  for (const auto& node : graph.nodes()) {
    const ir::Node* n = node.get();
    if (n->kind() != ir::Node::Kind::kCall || n->op() == nullptr) continue;
    if (IsGetitem(*n)) {
      if (preferred.contains(Producer(n))) preferred.insert({n, -1});
      continue;
    }
    if (n->op()->HasTag(ir::OpTag::kView) ||
        n->op()->HasTag(ir::OpTag::kBuiltin)) {
      continue;
    }
    const ir::ValueMeta& v = meta(n);
    int count = v.kind == ir::ValueMeta::Kind::kTuple
                    ? static_cast<int>(v.elements.size())
                    : 0;
    for (int e = count > 0 ? 0 : -1; e < count; ++e) {
      const ir::TensorMeta* m = TensorAt(v, e);
      if (m == nullptr || !ChannelsLastRank(*m)) continue;
      bool from_preferred = IsLibraryConvolution(*n, *m);
      for (const ir::Node* in : n->Inputs()) {
        const ir::TensorMeta* im = TensorAt(meta(in), -1);
        from_preferred =
            from_preferred ||
            (im != nullptr && im->sizes.size() == m->sizes.size() &&
             preferred.contains({in, -1}));
      }
      if (!from_preferred) continue;
      preferred.insert({n, e});
      // Stored channels-last where no one can tell.
      if (seen_only_by_producer(*m) &&
          m->strides == ir::ContiguousStrides(m->sizes)) {
        channels_last_.insert({n, e});
      }
    }
  }
}

bool BufferLayouts::ChannelsLast(const ir::Node* n, int element) const {
  Key k = element >= 0 ? Key{n, element} : Producer(n);
  return channels_last_.contains(k);
}

std::vector<symbolic::Expr> BufferLayouts::Strides(
    const ir::Node* n, int element, const ir::TensorMeta& m) const {
  return ChannelsLast(n, element) ? ir::ChannelsLastStrides(m.sizes)
                                  : m.strides;
}

ir::TensorMeta BufferLayouts::Layout(const ir::Node* n, int element,
                                     const ir::TensorMeta& m) const {
  ir::TensorMeta out = m;
  if (ChannelsLast(n, element)) {
    out.strides = ir::ChannelsLastStrides(m.sizes);
    out.storage_offset = symbolic::Int(0);
  }
  return out;
}

}  // namespace lathe::codegen::lower
