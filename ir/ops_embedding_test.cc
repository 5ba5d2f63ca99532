// The embedding ops' kernels (embedding_dense_backward, _embedding_bag in
// every mode, with per-sample weights, padding and include_last_offset)
// against values captured from PyTorch 2.15 on CPU. Every RunOp call also
// checks that the op's meta function predicts the kernel's result.

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/op_testing.h"
#include "ir/ops_nn_testing.h"
#include "ir/value.h"
#include "runtime/tensor.h"

namespace lathe::ir {
namespace {

TEST(NnOpsTest, EmbeddingDenseBackward) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // repeated indices accumulate; padding_idx rows stay zero; scale_grad_by_freq
  // divides by counts; int32 indices.
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(T({2, 3}, {1.0, 0.0, 3.0, 1.0, 1.0, 4.0}, DType::kInt64)),
        Value::Int(6), Value::Int(4), Value::Bool(true)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {6, 4}, DType::kFloat32,
           {-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, 0.0, 0.0, 0.0, 0.0,
            -1.5, -1.5, -1.5, -1.5, 0.0,  0.0,  0.0,  0.0,  0.0, 0.0, 0.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({2, 3, 4}, DType::kFloat32, 7, 3, 0.5)),
        V(T({2, 3}, {1.0, 0.0, 3.0, 1.0, 1.0, 4.0}, DType::kInt64)),
        Value::Int(6), Value::Int(-1), Value::Bool(false)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {6, 4}, DType::kFloat32,
           {-1.5, -1.5, -1.5, -1.5, -4.5, -4.5, -4.5, -4.5, 0.0, 0.0, 0.0, 0.0,
            -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, 0.0, 0.0, 0.0, 0.0},
           0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({3, 2}, DType::kFloat32, 11, 5, 0.5)),
                               V(T({3}, {2.0, 2.0, 0.0}, DType::kInt32)),
                               Value::Int(3), Value::Int(-1),
                               Value::Bool(false)};
    Value r = RunV("aten.embedding_dense_backward.default", args);
    Expect(r, {3, 2}, DType::kFloat32, {0.5, -1.5, 0.0, 0.0, -3.5, 3.5}, 0.0001,
           true);
  }
}

TEST(NnOpsTest, EmbeddingBag) {
  // Expected values computed by PyTorch 2.15 (torch.ops.aten) and captured.
  // sum/mean/max x include_last_offset x float32 (fast path: empty offset2bag)
  // / float64, an empty bag, per_sample_weights, padding_idx, int32 indices.
  // include_last_offset with offsets ending at len(indices) (PyTorch's fast and
  // slow paths disagree otherwise).
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, -2.0, -4.5, -0.5}, 0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {-0.5, 0.0, 0.5, 0.0, 0.0, 0.0, -2.0, -4.5, -0.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, 0.5, -2.5, 1.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, 0.5, -2.5, 1.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, -0.6666666865348816, -1.5,
            -0.1666666716337204},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {-0.25, 0.0, 0.25, 0.0, 0.0, 0.0, -0.6666666666666666, -1.5,
            -0.16666666666666666},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -2.0, 1.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat64,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -2.0, 1.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {2.0, 0.0, 2.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0}, 0.0001,
           true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, 0.5, 1.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat64, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat64,
           {1.0, 2.0, 1.5, 0.0, 0.0, 0.0, 1.0, 0.5, 1.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {2.0, 0.0, 3.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        V(Seq({5}, DType::kFloat32, 5, 1, 0.5)),
        Value::Bool(false),
        Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.25, 2.0, -1.25, 0.0, 0.0, 0.0, 0.0, -4.5, 0.75, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {0}, DType::kInt64, {}, 0.0001, true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(1),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {-1.5, 2.0, -1.0, 0.0, 0.0, 0.0, 0.0, -3.0, 0.5, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {1.0, 0.0, 1.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {1.0, 0.0, 1.0, 1.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 5.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(2),
        Value::Bool(false),
        Value::None(),
        Value::Bool(true),
        Value::Int(1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {3, 3}, DType::kFloat32,
           {-1.5, 2.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5}, 0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 2.0}, 0.0001,
           true);
    Expect(Out(r, 2), {3}, DType::kInt64, {1.0, 0.0, 2.0}, 0.0001, true);
    Expect(Out(r, 3), {3, 3}, DType::kInt64,
           {2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 4.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {
        V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
        V(T({5}, {1.0, 2.0, 4.0, 1.0, 0.0}, DType::kInt64)),
        V(T({4}, {0.0, 2.0, 2.0, 4.0}, DType::kInt64)),
        Value::Bool(false),
        Value::Int(0),
        Value::Bool(false),
        Value::None(),
        Value::Bool(false),
        Value::Int(2)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {4, 3}, DType::kFloat32,
           {1.0, -2.0, 1.5, 0.0, 0.0, 0.0, 1.0, -5.0, 2.0, -3.0, 0.5, -2.5},
           0.0001, true);
    Expect(Out(r, 1), {5}, DType::kInt64, {0.0, 0.0, 2.0, 2.0, 3.0}, 0.0001,
           true);
    Expect(Out(r, 2), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
    Expect(Out(r, 3), {4}, DType::kInt64, {0.0, 0.0, 0.0, 0.0}, 0.0001, true);
  }
  {
    std::vector<Value> args = {V(Seq({5, 3}, DType::kFloat32, 13, 6, 0.5)),
                               V(T({2}, {3.0, 0.0}, DType::kInt32)),
                               V(T({2}, {0.0, 1.0}, DType::kInt32)),
                               Value::Bool(false),
                               Value::Int(1),
                               Value::Bool(false),
                               Value::None(),
                               Value::Bool(false),
                               Value::Int(-1)};
    Value r = RunV("aten._embedding_bag.default", args);
    Expect(Out(r, 0), {2, 3}, DType::kFloat32,
           {2.5, -0.5, 3.0, -3.0, 0.5, -2.5}, 0.0001, true);
    Expect(Out(r, 1), {2}, DType::kInt32, {0.0, 1.0}, 0.0001, true);
    Expect(Out(r, 2), {2}, DType::kInt32, {1.0, 1.0}, 0.0001, true);
    Expect(Out(r, 3), {2}, DType::kInt32, {1.0, 1.0}, 0.0001, true);
  }
}

}  // namespace
}  // namespace lathe::ir
