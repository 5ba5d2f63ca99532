#!/usr/bin/env bash
# lathe's CUDA checks on a GPU machine, in one command and under 8 minutes,
# from the binaries tools/gpu/prepare.sh staged (no Bazel there):
#   1. the CUDA test targets on the real driver (LATHE_CUDA_DEVICE=gpu):
#      NVRTC, the driver table, cuBLASLt and cuDNN (and their matrix
#      products and convolutions on device memory), device storage and its pinned staging, the cuda
#      backend end to end (with a grid-stride run past one grid), and its
#      calls replayed as CUDA graphs;
#   2. the graph corpus and the AOT scenarios through `lathec run --backend
#      cuda` against the interpreter (tools:corpus_cpu_test's CorpusCudaTest);
#   3. compute-sanitizer memcheck and racecheck on a sample (the cuda
#      backend's end-to-end test);
#   4. tools/gpu/bench.py: lathe beside PyTorch eager and torch.compile.
# Writes its logs and the table to OUT and prints a summary table last.
# With LATHE_CUDA_DEVICE=emulated it runs the same steps on the emulated
# device (a dry run on a machine without a GPU; no sanitizer, no PyTorch).
#
#   bash tools/gpu/check.sh OUT [STAGE]     (STAGE: .gpu, holding stage.tar.xz)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: check.sh OUT [STAGE]}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# prepare.sh's package, unpacked.
stage=$(mktemp -d)
tar -xJf "${2:-.gpu}/stage.tar.xz" -C "$stage" || exit 1
export LD_LIBRARY_PATH=$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NVIDIA's libraries from pip (cuDNN, cuBLAS) where the image has them
# there rather than in the toolkit; after the stage's and the system's.
for d in $(python3 -c 'import glob, site
for s in site.getsitepackages(): print("\n".join(glob.glob(s + "/nvidia/*/lib")))' 2>/dev/null); do
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
done
export LATHE_CUDA_DEVICE=${LATHE_CUDA_DEVICE:-gpu}
export TEST_SRCDIR=$stage/runfiles
export TEST_TMPDIR=$(mktemp -d)
export HOME=${HOME:-/tmp}
bin=$stage/bin
: >"$out/steps.txt"
step() {  # step NAME TIMEOUT_S COMMAND...: runs it, logs to OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local verdict=pass
  [ $rc -eq 0 ] || verdict="FAIL (rc $rc)"
  printf '%-34s %-14s %4ss\n' "$name" "$verdict" $((SECONDS - start)) \
    >>"$out/steps.txt"
  echo "== $name: $verdict"
  tail -3 "$out/$name.log"
}

if [ "$LATHE_CUDA_DEVICE" = emulated ]; then
  device="the emulated CUDA device (no GPU)"
else
  device=$(nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -1)
  device=${device:-"no nvidia-smi"}
fi
echo "device: $device" | tee "$out/device.txt"

step nvrtc_test 60 "$bin/nvrtc_test"
step driver_api_test 60 "$bin/driver_api_test"
step cublaslt_test 60 "$bin/cublaslt_test"
step cudnn_test 60 "$bin/cudnn_test"
step cuda_storage_test 60 "$bin/cuda_storage_test"  # pinned staging
step cuda_kernels_test 60 "$bin/cuda_kernels_test"  # emulated-only: skips
step device_routines_test 60 "$bin/device_routines_test"  # cuBLASLt, cuDNN
# (Its FileCheck tests read the emitted text and the PTX NVRTC makes,
# which need no GPU: they run in CI; the stage carries no FileCheck.)
step compile_cuda_test 180 "$bin/compile_cuda_test" --gtest_filter='-*Int32*:*InThePtx*'
step cuda_graphs_test 120 "$bin/cuda_graphs_test"  # cuGraph replays
# The two corpora and the sanitizers side by side (the machine has cores
# to spare); the benchmark after them, alone.
step corpus_cuda_aot 300 "$bin/corpus_cpu_test" \
  --gtest_filter='CorpusCudaTest.Aot*' &
step corpus_cuda_graphs 300 "$bin/corpus_cpu_test" \
  --gtest_filter='CorpusCudaTest.Graph*' &
if [ "$LATHE_CUDA_DEVICE" != emulated ] && command -v compute-sanitizer >/dev/null; then
  step memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$bin/compile_cuda_test" --gtest_filter='*Silu*:*Views*:*Symbolic*' &
  step racecheck 150 compute-sanitizer --tool racecheck --error-exitcode 1 \
    "$bin/compile_cuda_test" --gtest_filter='*Silu*' &
  step memcheck_graphs 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$bin/cuda_graphs_test" --gtest_filter='*InputsValues*:*InPlace*' &
else
  printf '%-34s %-14s\n' compute-sanitizer 'skipped (no GPU)' >>"$out/steps.txt"
fi
wait
step bench 300 python3 tools/gpu/bench.py "$bin/cuda_benchmark" "$out"

{
  echo
  echo "lathe tools/gpu/check.sh on $device, $(date -u +%Y-%m-%dT%H:%MZ)"
  cat "$out/steps.txt"
  echo
  cat "$out/bench_table.txt" 2>/dev/null
} | tee "$out/summary.txt"
rm -rf "$TEST_TMPDIR" "$stage"
grep -q FAIL "$out/summary.txt" && exit 1
exit 0
