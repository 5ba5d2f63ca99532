#include "aot/runtime_wrapper_plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/alias_info.h"
#include "ir/known_ops.h"
#include "ir/shape_prop.h"
#include "runtime/copy.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"

namespace lathe::aot {
namespace {

using ir::Arg;
using ir::Node;

Layout MakeLayout(std::vector<symbolic::Expr> sizes,
                  std::vector<symbolic::Expr> strides, symbolic::Expr offset) {
  Layout l{std::move(sizes), std::move(strides), offset};
  l.concrete = offset.kind() == symbolic::ExprKind::kInteger;
  for (const auto* list : {&l.sizes, &l.strides}) {
    for (symbolic::Expr e : *list) {
      l.concrete = l.concrete && e.kind() == symbolic::ExprKind::kInteger;
    }
  }
  if (l.concrete) {
    for (symbolic::Expr e : l.sizes) l.int_sizes.push_back(e.int_value());
    for (symbolic::Expr e : l.strides) l.int_strides.push_back(e.int_value());
    l.int_storage_offset = offset.int_value();
  }
  return l;
}

// An int argument (a literal or a SymInt node) as an expression.
absl::StatusOr<symbolic::Expr> ExprOf(const Node& n, const Arg& a) {
  if (a.kind == Arg::Kind::kInt) return symbolic::Int(a.i);
  if (a.kind == Arg::Kind::kNode &&
      a.node->meta().kind == ir::ValueMeta::Kind::kSym &&
      a.node->meta().sym.is_int()) {
    return a.node->meta().sym;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("node '", n.name(), "': expected an int"));
}

// The layout an as_strided_(self, size, stride, offset) node sets.
absl::StatusOr<Layout> LayoutOfAsStrided(const Node& n) {
  const std::vector<Arg>& a = n.args();
  auto ints = [&](size_t i) -> absl::StatusOr<std::vector<symbolic::Expr>> {
    std::vector<symbolic::Expr> out;
    if (i >= a.size() || a[i].kind != Arg::Kind::kList) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n.name(), "': expected an int list"));
    }
    for (const Arg& e : a[i].list) {
      ASSIGN_OR_RETURN(symbolic::Expr x, ExprOf(n, e));
      out.push_back(x);
    }
    return out;
  };
  ASSIGN_OR_RETURN(std::vector<symbolic::Expr> sizes, ints(1));
  ASSIGN_OR_RETURN(std::vector<symbolic::Expr> strides, ints(2));
  symbolic::Expr offset = symbolic::Int(0);
  if (a.size() > 3) {
    ASSIGN_OR_RETURN(offset, ExprOf(n, a[3]));
  }
  return MakeLayout(std::move(sizes), std::move(strides), offset);
}

std::string IntList(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ", "), "}");
}

}  // namespace

std::string StorageOffsetCpp(const Layout& layout,
                             const std::string& base_offset,
                             const std::string& printed) {
  if (!layout.from_base_offset) return printed;
  const symbolic::Expr e = layout.storage_offset;
  if (e.kind() != symbolic::ExprKind::kInteger) {
    return absl::StrCat(base_offset, " + (", printed, ")");
  }
  const int64_t k = e.int_value();
  if (k == 0) return base_offset;
  return absl::StrCat(
      base_offset, k < 0 ? " - " : " + ",
      k < 0 ? absl::StrCat(-static_cast<uint64_t>(k)) : absl::StrCat(k));
}

absl::StatusOr<RuntimeWrapperPlan> BuildRuntimeWrapperPlan(
    ir::Graph& graph, const ViewAndMutationMeta& meta) {
  RuntimeWrapperPlan plan;
  std::vector<Node*> inputs = graph.Placeholders();
  Node* output = graph.output();
  if (output == nullptr || output->args().size() != 1 ||
      output->args()[0].kind != Arg::Kind::kList) {
    return absl::InvalidArgumentError("the graph has no output list");
  }
  std::vector<Arg> user_outs = output->args()[0].list;
  if (inputs.size() != meta.inputs.size() ||
      user_outs.size() != meta.outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the metadata describes ", meta.inputs.size(), " inputs and ",
        meta.outputs.size(), " outputs; the graph has ", inputs.size(), " and ",
        user_outs.size()));
  }
  plan.num_inputs_ = static_cast<int>(inputs.size());
  for (Node* p : inputs) plan.input_names_.push_back(p->name());

  // Symbols the layouts may use, read from the inputs' sizes and strides,
  // else (data-dependent ones) from the user outputs'.
  absl::flat_hash_map<symbolic::Expr, SymbolSource> sources;
  auto add_sources = [&](const Node* n, bool from_output, int index) {
    if (n == nullptr || n->meta().kind != ir::ValueMeta::Kind::kTensor) return;
    ir::ForEachSymbolDim(
        n->meta().tensor, [&](symbolic::Expr s, bool stride, int dim) {
          sources.emplace(s, SymbolSource{s, from_output, index, stride, dim});
        });
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    add_sources(inputs[i], false, static_cast<int>(i));
  }
  absl::flat_hash_set<symbolic::Expr> used;
  auto use_symbols = [&](const Layout& l,
                         const std::string& what) -> absl::Status {
    if (l.concrete) return absl::OkStatus();
    std::vector<symbolic::Expr> all = l.sizes;
    all.insert(all.end(), l.strides.begin(), l.strides.end());
    all.push_back(l.storage_offset);
    for (symbolic::Expr e : all) {
      for (symbolic::Expr s : symbolic::FreeSymbols(e)) {
        if (!sources.contains(s)) {
          return absl::UnimplementedError(
              absl::StrCat(what, " has a layout that depends on ", s.name(),
                           ", which no input or output size or stride gives"));
        }
        if (used.insert(s).second) plan.symbols_.push_back(sources[s]);
      }
    }
    return absl::OkStatus();
  };
  auto layout_of = [&](const ir::TensorMeta& m,
                       int k) -> absl::StatusOr<Layout> {
    Layout l = MakeLayout(m.sizes, m.strides, m.storage_offset);
    l.dtype = m.dtype;  // kept below only where it differs from the base's
    RETURN_IF_ERROR(
        use_symbols(l, absl::StrCat("output ", k,
                                    ", which aliases an input or another "
                                    "output,")));
    return l;
  };

  // The epilogue: per input, copy_, then set_ or as_strided_.
  std::vector<Arg> updated;  // graph outputs ahead of the user outputs
  absl::flat_hash_map<Node*, Node*> replaced;  // erased node -> its value
  std::vector<Node*> erase;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node* p = inputs[i];
    const InputInfo& info = meta.inputs[i];
    Node *set = nullptr, *copy = nullptr, *restride = nullptr;
    for (Node* u : p->users()) {
      if (ir::EpilogueKind(*u) == nullptr || u->args()[0].node != p) continue;
      if (u->op() == ir::Known().set_) set = u;
      if (u->op() == ir::Known().copy_) copy = u;
      if (u->op() == ir::Known().as_strided_) restride = u;
    }
    auto take_updated = [&](Node* n, EpilogueStep::Kind kind) {
      EpilogueStep step;
      step.kind = kind;
      step.input = static_cast<int>(i);
      step.updated = static_cast<int>(updated.size());
      updated.push_back(n->args()[1]);
      plan.epilogue_.push_back(std::move(step));
      replaced[n] = n->args()[1].node;
      erase.push_back(n);
    };
    if (copy != nullptr &&
        info.mutation_type != MutationType::kMutatedInGraph) {
      take_updated(copy, info.is_leaf && info.requires_grad
                             ? EpilogueStep::Kind::kCopyDetached
                             : EpilogueStep::Kind::kCopy);
    }
    // set_ last: a copy_ writes the storage the input had before it.
    if (set != nullptr) take_updated(set, EpilogueStep::Kind::kSet);
    if (restride != nullptr) {
      EpilogueStep step;
      step.kind = EpilogueStep::Kind::kAsStrided;
      step.input = static_cast<int>(i);
      ASSIGN_OR_RETURN(step.layout, LayoutOfAsStrided(*restride));
      RETURN_IF_ERROR(
          use_symbols(step.layout,
                      absl::StrCat("the new view of input '", p->name(), "'")));
      plan.epilogue_.push_back(std::move(step));
      replaced[restride] = copy != nullptr ? copy->args()[1].node : p;
      erase.push_back(restride);
    }
  }
  auto value_of = [&](Arg a) {
    while (a.kind == Arg::Kind::kNode && replaced.contains(a.node)) {
      a = Arg::Of(replaced[a.node]);
    }
    return a;
  };
  // Data-dependent sizes no input gives are read from the user outputs.
  for (size_t k = 0; k < user_outs.size(); ++k) {
    Arg a = value_of(user_outs[k]);
    add_sources(a.kind == Arg::Kind::kNode ? a.node : nullptr, true,
                static_cast<int>(updated.size() + k));
  }

  // Outputs.
  const int n_updated = static_cast<int>(updated.size());
  const int n_user = static_cast<int>(user_outs.size());
  for (int k = 0; k < n_user; ++k) {
    const OutputInfo& info = meta.outputs[k];
    OutputStep step;
    step.why = OutputTypeName(info.type);
    switch (info.type) {
      case OutputType::kNonAlias:
      case OutputType::kUnsafeViewAlias:
        step.kind = OutputStep::Kind::kGraphOutput;
        step.source = n_updated + k;
        break;
      case OutputType::kIsInput:
        step.kind = OutputStep::Kind::kInput;
        step.source = *info.base_index;
        break;
      case OutputType::kAliasOfInput: {
        step.kind = OutputStep::Kind::kViewOfInput;
        step.source = *info.base_index;
        ASSIGN_OR_RETURN(step.layout, layout_of(info.tensor, k));
        break;
      }
      case OutputType::kAliasOfIntermediateBaseIsUserOutput: {
        // A view of another output: of whatever that one is made from
        // (layouts address the storage, so any tensor on it will do); of
        // its graph value when it comes later.
        const int b = *info.base_index;
        step.kind = OutputStep::Kind::kViewOfGraphOutput;
        step.source = n_updated + b;
        if (b < k) {
          const OutputStep& base = plan.outputs_[b];
          if (base.kind == OutputStep::Kind::kInput ||
              base.kind == OutputStep::Kind::kViewOfInput) {
            step.kind = OutputStep::Kind::kViewOfInput;
            step.source = base.source;
          } else if (base.kind == OutputStep::Kind::kViewOfGraphOutput) {
            step.source = base.source;
          }
        }
        ASSIGN_OR_RETURN(step.layout, layout_of(info.tensor, k));
        break;
      }
      case OutputType::kAliasOfIntermediate:
      case OutputType::kAliasOfIntermediateSaveAsOutput: {
        step.kind = OutputStep::Kind::kViewOfGraphOutput;
        step.source = n_updated + n_user + *info.base_index;
        ASSIGN_OR_RETURN(step.layout, layout_of(info.tensor, k));
        break;
      }
    }
    plan.outputs_.push_back(std::move(step));
  }
  // Views of an input the epilogue leaves in place count from its offset:
  // compiled code reads the input from its first element, so it may come at
  // any offset, and its views must move with it (x.t() of an x at offset 3
  // is at offset 3). An input compiled at a symbolic offset keeps absolute
  // layouts (its offset is guarded).
  for (OutputStep& step : plan.outputs_) {
    if (step.kind != OutputStep::Kind::kViewOfInput ||
        plan.Rebinds(step.source)) {
      continue;
    }
    const ir::ValueMeta& m = inputs[step.source]->meta();
    if (m.kind != ir::ValueMeta::Kind::kTensor ||
        m.tensor.storage_offset.kind() != symbolic::ExprKind::kInteger ||
        step.layout.dtype != m.tensor.dtype) {
      continue;
    }
    Layout& l = step.layout;
    const int64_t base = m.tensor.storage_offset.int_value();
    l.storage_offset = symbolic::Sub(l.storage_offset, symbolic::Int(base));
    l.int_storage_offset -= base;
    l.from_base_offset = true;
  }

  // The graph: updated values, user outputs, intermediate bases.
  std::vector<Arg> results = updated;
  for (const Arg& a : user_outs) results.push_back(value_of(a));
  for (const Node* b : meta.intermediate_bases) {
    results.push_back(Arg::Of(const_cast<Node*>(b)));
  }
  plan.num_graph_outputs_ = static_cast<int>(results.size());
  // A view keeps its dtype only where its base has another (view.dtype).
  for (OutputStep& step : plan.outputs_) {
    const Node* base = nullptr;
    if (step.kind == OutputStep::Kind::kViewOfInput) {
      base = inputs[step.source];
    } else if (step.kind == OutputStep::Kind::kViewOfGraphOutput &&
               results[step.source].kind == Arg::Kind::kNode) {
      base = results[step.source].node;
    }
    if (base == nullptr || base->meta().kind != ir::ValueMeta::Kind::kTensor ||
        base->meta().tensor.dtype == step.layout.dtype) {
      step.layout.dtype.reset();
    }
  }
  output->SetArgs({Arg::List(std::move(results))}, {});
  for (size_t k = 0; k < erase.size(); ++k) {
    Node* n = erase[k];
    if (!n->users().empty()) {
      return absl::InternalError(
          absl::StrCat("epilogue node '", n->name(), "' is still used"));
    }
    // The size arithmetic only an erased as_strided_ read goes too.
    std::vector<Node*> feeds;
    if (n->op() == ir::Known().as_strided_ ||
        (n->meta().kind == ir::ValueMeta::Kind::kSym &&
         n->kind() == Node::Kind::kCall)) {
      for (Node* in : n->Inputs()) {
        if (in->kind() == Node::Kind::kCall) feeds.push_back(in);
      }
    }
    RETURN_IF_ERROR(graph.Erase(n));
    for (Node* in : feeds) {
      if (in->users().empty() &&
          std::find(erase.begin(), erase.end(), in) == erase.end()) {
        erase.push_back(in);
      }
    }
  }
  return plan;
}

bool RuntimeWrapperPlan::Rebinds(int i) const {
  for (const EpilogueStep& e : epilogue_) {
    if (e.input == i && (e.kind == EpilogueStep::Kind::kAsStrided ||
                         e.kind == EpilogueStep::Kind::kSet)) {
      return true;
    }
  }
  return false;
}

bool RuntimeWrapperPlan::ReadsStorageOffset(int i) const {
  if (Rebinds(i)) return true;
  for (const OutputStep& o : outputs_) {
    if (o.kind == OutputStep::Kind::kViewOfInput && o.source == i &&
        !o.layout.from_base_offset) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<symbolic::Assignment> RuntimeWrapperPlan::SymbolValues(
    absl::Span<const Tensor> inputs,
    absl::Span<const Tensor> graph_outputs) const {
  symbolic::Assignment values;
  for (const SymbolSource& s : symbols_) {
    const Tensor& t = s.from_output ? graph_outputs[s.index] : inputs[s.index];
    const std::vector<int64_t>& list = s.stride ? t.strides() : t.sizes();
    if (!t.defined() || s.dim >= static_cast<int>(list.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          s.from_output ? "graph output " : "input ", s.index, " has no ",
          s.stride ? "stride " : "size ", s.dim, " for ", s.symbol.name()));
    }
    values[s.symbol] = symbolic::Value::Int(list[s.dim]);
  }
  return values;
}

absl::StatusOr<Tensor> RuntimeWrapperPlan::View(
    const Tensor& base, const Layout& layout,
    const symbolic::Assignment& values) const {
  if (!base.defined()) {
    return absl::InvalidArgumentError(
        "the base of an output view is not a tensor");
  }
  const int64_t from = layout.from_base_offset ? base.storage_offset() : 0;
  auto view = [&](absl::Span<const int64_t> sizes,
                  absl::Span<const int64_t> strides, int64_t offset) {
    if (layout.dtype.has_value() && *layout.dtype != base.dtype()) {
      return Tensor::Wrap(base.storage(), *layout.dtype, sizes, strides,
                          offset);
    }
    return base.AsStrided(sizes, strides, offset);
  };
  if (layout.concrete) {
    return view(layout.int_sizes, layout.int_strides,
                from + layout.int_storage_offset);
  }
  auto eval = [&](symbolic::Expr e) -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(symbolic::Value v, symbolic::Evaluate(e, values));
    return v.i;
  };
  std::vector<int64_t> sizes, strides;
  for (symbolic::Expr e : layout.sizes) {
    ASSIGN_OR_RETURN(int64_t v, eval(e));
    sizes.push_back(v);
  }
  for (symbolic::Expr e : layout.strides) {
    ASSIGN_OR_RETURN(int64_t v, eval(e));
    strides.push_back(v);
  }
  ASSIGN_OR_RETURN(int64_t offset, eval(layout.storage_offset));
  return view(sizes, strides, from + offset);
}

absl::StatusOr<std::vector<Tensor>> RuntimeWrapperPlan::Run(
    absl::Span<Tensor> inputs, absl::Span<const Tensor> graph_outputs) const {
  if (static_cast<int>(inputs.size()) != num_inputs_ ||
      static_cast<int>(graph_outputs.size()) != num_graph_outputs_) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime wrapper: expected ", num_inputs_, " inputs and ",
                     num_graph_outputs_, " graph outputs, got ", inputs.size(),
                     " and ", graph_outputs.size()));
  }
  // Symbolic layouts read the inputs as they came in (empty when none is).
  symbolic::Assignment values;
  if (!symbols_.empty()) {
    ASSIGN_OR_RETURN(values, SymbolValues(inputs, graph_outputs));
  }
  for (const EpilogueStep& s : epilogue_) {
    Tensor& in = inputs[s.input];
    switch (s.kind) {
      case EpilogueStep::Kind::kCopy:
      case EpilogueStep::Kind::kCopyDetached:
        RETURN_IF_ERROR(CopyTensor(in, graph_outputs[s.updated]));
        break;
      case EpilogueStep::Kind::kAsStrided: {
        ASSIGN_OR_RETURN(in, View(in, s.layout, values));
        break;
      }
      case EpilogueStep::Kind::kSet:
        in = graph_outputs[s.updated];
        break;
    }
  }
  std::vector<Tensor> outs;
  outs.reserve(outputs_.size());
  for (const OutputStep& s : outputs_) {
    switch (s.kind) {
      case OutputStep::Kind::kGraphOutput:
        outs.push_back(graph_outputs[s.source]);
        break;
      case OutputStep::Kind::kInput:
        outs.push_back(inputs[s.source]);
        break;
      case OutputStep::Kind::kViewOfInput: {
        ASSIGN_OR_RETURN(Tensor v, View(inputs[s.source], s.layout, values));
        outs.push_back(std::move(v));
        break;
      }
      case OutputStep::Kind::kViewOfGraphOutput: {
        ASSIGN_OR_RETURN(Tensor v,
                         View(graph_outputs[s.source], s.layout, values));
        outs.push_back(std::move(v));
        break;
      }
    }
  }
  return outs;
}

std::string RuntimeWrapperPlan::CppSource(const std::string& name) const {
  std::string out;
  absl::StrAppend(
      &out, "// The runtime wrapper (generated by lathe from a ",
      "RuntimeWrapperPlan).\n// in: the caller's inputs (set_/as_strided_ ",
      "rebind them); fw: the compiled graph's\n// outputs (updated inputs, ",
      "user outputs, intermediate bases); out: the user outputs.\n",
      "absl::Status ", name, "(absl::Span<lathe::Tensor> in,\n",
      std::string(name.size() + 14, ' '),
      "absl::Span<const lathe::Tensor> fw,\n",
      std::string(name.size() + 14, ' '),
      "std::vector<lathe::Tensor>* out) {\n");
  absl::StrAppend(&out, "  if (in.size() != ", num_inputs_,
                  " || fw.size() != ", num_graph_outputs_, ") {\n",
                  "    return absl::InvalidArgumentError(\"runtime wrapper: "
                  "expected ",
                  num_inputs_, " inputs and ", num_graph_outputs_,
                  " graph outputs\");\n  }\n");
  auto sym = [](symbolic::Expr s) { return absl::StrCat("sym_", s.name()); };
  for (const SymbolSource& s : symbols_) {
    absl::StrAppend(&out, "  const int64_t ", sym(s.symbol), " = ",
                    s.from_output ? "fw[" : "in[", s.index, "].",
                    s.stride ? "strides" : "sizes", "()[", s.dim, "];\n");
  }
  symbolic::CppPrintOptions cpp{.symbol_name = sym};
  auto list = [&](const std::vector<symbolic::Expr>& v,
                  const std::vector<int64_t>& ints, bool concrete) {
    if (concrete) return IntList(ints);
    std::vector<std::string> parts;
    for (symbolic::Expr e : v) parts.push_back(symbolic::ToCpp(e, cpp));
    return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  };
  auto view = [&](const std::string& base, const Layout& l) {
    return absl::StrCat(
        l.dtype.has_value() ? absl::StrCat("lathe::Tensor::Wrap(", base,
                                           ".storage(), lathe::DType(",
                                           static_cast<int>(*l.dtype), "), ")
                            : absl::StrCat(base, ".AsStrided("),
        list(l.sizes, l.int_sizes, l.concrete), ", ",
        list(l.strides, l.int_strides, l.concrete), ", ",
        StorageOffsetCpp(l, absl::StrCat(base, ".storage_offset()"),
                         symbolic::ToCpp(l.storage_offset, cpp)),
        ")");
  };
  for (const EpilogueStep& s : epilogue_) {
    std::string in = absl::StrCat("in[", s.input, "]");
    std::string who = input_names_[s.input];
    switch (s.kind) {
      case EpilogueStep::Kind::kCopy:
        absl::StrAppend(&out, "  RETURN_IF_ERROR(lathe::CopyTensor(", in,
                        ", fw[", s.updated, "]));  // ", who, ".copy_\n");
        break;
      case EpilogueStep::Kind::kCopyDetached:
        absl::StrAppend(&out, "  RETURN_IF_ERROR(lathe::CopyTensor(", in,
                        ", fw[", s.updated, "]));  // ", who,
                        ".detach().copy_: a leaf that requires grad\n");
        break;
      case EpilogueStep::Kind::kAsStrided:
        absl::StrAppend(&out, "  ASSIGN_OR_RETURN(", in, ", ",
                        view(in, s.layout), ");  // ", who, ".as_strided_\n");
        break;
      case EpilogueStep::Kind::kSet:
        absl::StrAppend(&out, "  ", in, " = fw[", s.updated, "];  // ", who,
                        ".set_\n");
        break;
    }
  }
  absl::StrAppend(&out, "  out->resize(", outputs_.size(), ");\n");
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const OutputStep& s = outputs_[k];
    std::string slot = absl::StrCat("(*out)[", k, "]");
    switch (s.kind) {
      case OutputStep::Kind::kGraphOutput:
        absl::StrAppend(&out, "  ", slot, " = fw[", s.source, "];");
        break;
      case OutputStep::Kind::kInput:
        absl::StrAppend(&out, "  ", slot, " = in[", s.source, "];");
        break;
      case OutputStep::Kind::kViewOfInput:
        absl::StrAppend(&out, "  ASSIGN_OR_RETURN(", slot, ", ",
                        view(absl::StrCat("in[", s.source, "]"), s.layout),
                        ");");
        break;
      case OutputStep::Kind::kViewOfGraphOutput:
        absl::StrAppend(&out, "  ASSIGN_OR_RETURN(", slot, ", ",
                        view(absl::StrCat("fw[", s.source, "]"), s.layout),
                        ");");
        break;
    }
    absl::StrAppend(&out, "  // ", s.why, "\n");
  }
  absl::StrAppend(&out, "  return absl::OkStatus();\n}\n");
  return out;
}

}  // namespace lathe::aot
