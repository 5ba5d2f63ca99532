#include "passes/adam_inputs.h"

#include <cmath>
#include <string>
#include <vector>

#include "check.h"
#include "ir/op_testing.h"

namespace lathe::passes {

std::vector<ir::Value> AdamInputs(const ir::Graph& graph, double lr,
                                  double step, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  std::vector<ir::Value> out;
  for (const ir::Node* ph : graph.Placeholders()) {
    const std::string& n = ph->name();
    if (ph->meta().kind == ir::ValueMeta::Kind::kSym) {
      out.push_back(ir::Value::Float(n == "lr"      ? lr
                                     : n == "beta1" ? 0.9
                                     : n == "beta2" ? 0.999
                                                    : step));
      continue;
    }
    std::vector<int64_t> sizes;
    int64_t count = 1;
    for (const auto& s : ph->meta().tensor.sizes) {
      sizes.push_back(s.int_value());
      count *= s.int_value();
    }
    std::vector<double> values;
    for (int64_t i = 0; i < count; ++i) {
      double x = normal(rng);
      values.push_back(n[0] == 'v' ? std::abs(x) : x);
    }
    out.push_back(ir::V(ir::T(sizes, values)));
  }
  return out;
}

std::vector<ir::Value> CopyInputs(const std::vector<ir::Value>& inputs) {
  std::vector<ir::Value> out;
  for (const ir::Value& v : inputs) {
    if (!v.is_tensor()) {
      out.push_back(v);
      continue;
    }
    absl::StatusOr<Tensor> t = v.tensor.Clone();
    LATHE_CHECK(t.ok()) << t.status().message();
    out.push_back(ir::V(*t));
  }
  return out;
}

}  // namespace lathe::passes
