#!/usr/bin/env bash
# lathe's two jobs, runnable on a fresh Debian bookworm machine. Each first
# installs whatever system package is missing (apt-get; quiet when all are
# present), then runs Bazel offline.
#
#   bash tools/dev.sh main   # build everything, run lathec on the example graph
#   bash tools/dev.sh test   # the whole test suite; ends with "N passed, N failed"
#
# The test job runs, in order: a plain build of every target, running the
# tests tagged `plain` (the big corpora and random-program tests in full,
# and what sanitized builds leave out) and `python`; every test target under
# AddressSanitizer + UndefinedBehaviorSanitizer (--config=sanitizers, the big
# corpora as a fixed sample); the tests tagged `threads` under
# ThreadSanitizer (--config=tsan); and the consumer workspace in
# tools/consumer_example, which takes lathe as a dependency and calls an
# artifact `lathec compile` writes for it. So every test runs, the untagged
# ones once, under the sanitizers. LATHE_SKIP_SANITIZERS=1 skips both
# sanitizer passes and runs every test in the plain pass instead.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
readonly ROOT=$PWD

# The Debian packages lathe builds against (DESIGN.md §4). The CUDA toolkit is
# not among them: it is NVIDIA's, expected at $CUDA_PATH or /usr/local/cuda.
readonly PACKAGES=(
  bazel-bootstrap
  g++
  libabsl-dev
  libbenchmark-dev
  libeigen3-dev
  libgmock-dev
  libgtest-dev
  llvm-14-tools
  libdnnl-dev
  libhwy-dev
  libopenblas-dev
  libsleef-dev
  libssl-dev
  libhiredis-dev
  redis-server
  graphviz
  # The compile report's browser test (tools/trace/report_chromium_test.sh);
  # about 20 seconds to install with apt-get's download.
  chromium
)

log() { printf 'lathe: %s\n' "$*" >&2; }

ensure_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    log "installing missing packages: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq >/dev/null || { log "apt-get update failed"; return 1; }
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null ||
      { log "apt-get install ${missing[*]} failed"; return 1; }
  fi
  local cuda=${CUDA_PATH:-/usr/local/cuda}
  [ -f "$cuda/include/nvrtc.h" ] ||
    log "note: no CUDA toolkit at $cuda: CUDA code is compiled out and its tests skip"
  return 0
}

# PyTorch from PyPI for the Python package's tests (tools/python), the one
# part of lathe that needs it: installed with pip for python3 when missing.
# Without it (no pip, no network) those tests are not defined, and this says
# so in one line; the rest of the suite never needs torch.
readonly TORCH_PIN=torch==2.15.0

# reconfigure_torch: a Bazel server that configured the local_torch
# repository before torch was installed (`dev.sh main` first, or a pip
# install since) keeps it so: the package's targets would stay undefined and
# its tests silently absent. Bazel evaluates a local repository again when
# its server restarts.
reconfigure_torch() {
  local base
  base=$(cd "$ROOT" && bazel info output_base 2>/dev/null) || return 0
  if grep -q '^TORCH_FOUND = False' "$base/external/local_torch/torch_config.bzl" 2>/dev/null; then
    log "torch is installed now: restarting Bazel to configure the Python package"
    (cd "$ROOT" && bazel shutdown) >/dev/null 2>&1
  fi
  return 0
}
ensure_torch() {
  local python
  python=$(command -v "${LATHE_PYTHON:-python3}") || {
    log "no python3: the Python package's tests are skipped"
    return 0
  }
  if "$python" -c 'import torch' >/dev/null 2>&1; then
    reconfigure_torch
    return 0
  fi
  local start=$SECONDS
  log "installing $TORCH_PIN for $python (the Python package's tests)"
  if timeout 900 "$python" -m pip install -q "$TORCH_PIN" numpy >/dev/null 2>&1; then
    log "installed $TORCH_PIN in $((SECONDS - start)) s"
    reconfigure_torch
  else
    log "could not install $TORCH_PIN with pip: the Python package's tests are skipped"
  fi
  return 0
}

# Bazel keeps its cache under $HOME; make sure there is one.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME

PASSED=0
FAILED=0
STAGES=()

# stage_done LABEL START BUDGET: records how long stage LABEL took since
# START (seconds since the epoch) against its budget in seconds.
stage_done() {
  STAGES+=("$1|$(($(date +%s) - $2))|$3")
}

# print_stages: each stage's time and budget. The budgets add up to CI's
# 45 minutes from a cold cache on a 2-core machine; a stage past its budget
# is marked, so growth shows before CI's hard limit. The 2-core machines CI
# has had differ by about 2x: the same commit took 31 min on one and 59 on
# another (README.md, "Two commands").
print_stages() {
  local entry label secs budget total=0
  printf '%-34s %8s %8s\n' "stage" "seconds" "budget"
  for entry in "${STAGES[@]}"; do
    IFS='|' read -r label secs budget <<<"$entry"
    total=$((total + secs))
    printf '%-34s %8d %8d%s\n' "$label" "$secs" "$budget" \
      "$([ "$secs" -gt "$budget" ] && echo '  OVER BUDGET')"
  done
  printf '%-34s %8d %8d\n' "whole job" "$total" 2700
}

# run_tests LABEL BUDGET DIR BAZEL_TEST_ARGS...: runs `bazel test` in DIR,
# shows its output, adds its per-target results to PASSED / FAILED and its
# time to the stages. Bazel's profile of the stage (every action's time, for
# `bazel analyze-profile` or chrome://tracing) is kept in lathe-out/.
run_tests() {
  local label=$1 budget=$2 dir=$3
  shift 3
  local out rc passed failed start
  local profile="$ROOT/lathe-out/profile-${label//[^a-z0-9]/_}.json.gz"
  start=$(date +%s)
  out=$(mktemp)
  log "== $label: bazel test $*"
  mkdir -p "$ROOT/lathe-out"
  (cd "$dir" && bazel test --keep_going --profile="$profile" "$@") 2>&1 |
    tee "$out"
  rc=${PIPESTATUS[0]}
  passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$out")
  failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)' "$out")
  # A build or analysis error can fail the run before any test reports.
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  rm -f "$out"
  log "== $label: $passed passed, $failed failed"
  PASSED=$((PASSED + passed))
  FAILED=$((FAILED + failed))
  stage_done "$label" "$start" "$budget"
}

# The main job: build everything, compile the example graph (an MLP with a
# dynamic batch) once into an artifact, then call it on its example inputs
# from another process that loads the artifact with lathe's runtime alone.
job_main() {
  bazel build //... || return 1
  local lathec=bazel-out/k8-fastbuild/bin/tools/lathec
  local out="${LATHE_OUT:-$ROOT/lathe-out/mlp}"
  "$lathec" compile "$ROOT/tools/examples/mlp.txt" -o "$out-artifact" \
    --input x="$ROOT/tools/examples/mlp/x.npy" \
    --input w="$ROOT/tools/examples/mlp/w.npy" || return 1
  "$lathec" run --artifact "$out-artifact" \
    --input x="$ROOT/tools/examples/mlp/x.npy" \
    --input w="$ROOT/tools/examples/mlp/w.npy" --out "$out" || return 1
  log "the artifact (kernel.so, its source kernel.cc, manifest.txt, guard_bounds.txt) is in $out-artifact"
  log "outputs are in $out"
}

# sanitizer_only_tests: the test targets the plain pass leaves to the
# sanitizer pass, one per line: those tagged neither `plain` nor `python`.
sanitizer_only_tests() {
  bazel query --noshow_progress \
    'kind("_test rule", //...) except attr(tags, "\bplain\b|\bpython\b", //...)'
}

job_test() {
  local start skip=() sanitize=1
  [ "${LATHE_SKIP_SANITIZERS:-0}" = 1 ] && sanitize=0
  if ((sanitize)); then
    mapfile -t skip < <(sanitizer_only_tests 2>/dev/null)
    ((${#skip[@]})) || log "bazel query found no sanitizer-only tests: the plain pass runs them all"
  fi
  # Every target built (lathec, the Python package, the benchmarks) but the
  # tests of `skip`, given as a pattern file: //... less each of them.
  local patterns="$ROOT/lathe-out/plain-patterns.txt"
  mkdir -p "$ROOT/lathe-out" && echo //... >"$patterns"
  local test
  for test in "${skip[@]}"; do echo "-$test" >>"$patterns"; done
  log "the plain pass leaves ${#skip[@]} tests to the sanitizer pass"
  run_tests "plain build, plain tests" 1200 "$ROOT" \
    --target_pattern_file="$patterns"
  if ((sanitize)); then
    # Under the sanitizers the big corpora run a fixed sample
    # (LATHE_TEST_SAMPLE in .bazelrc, testing/sample.h).
    # Only what the tests need: the plain pass above built everything else.
    # Not the Python package's tests (tag python): a sanitized module cannot
    # be loaded into an interpreter that was not built with the sanitizers.
    run_tests "all tests under asan+ubsan" 1200 "$ROOT" --config=sanitizers \
      --build_tests_only --test_tag_filters=-python //...
    run_tests "threaded tests under tsan" 120 "$ROOT" --config=tsan \
      --build_tests_only --test_tag_filters=threads //...
  fi
  start=$(date +%s)
  # The consumer workspace calls an artifact this run compiles (with the
  # lathec of the plain build above), linking lathe's runtime alone.
  local artifact="$ROOT/lathe-out/consumer-artifact"
  if ! bazel-out/k8-fastbuild/bin/tools/lathec compile \
    "$ROOT/tools/examples/mlp.txt" -o "$artifact" \
    --input x="$ROOT/tools/examples/mlp/x.npy" \
    --input w="$ROOT/tools/examples/mlp/w.npy"; then
    log "lathec compile of the consumer's artifact failed"
    FAILED=$((FAILED + 1))
  fi
  # An exported PyTorch model's artifact too, where torch is installed: the
  # package as built above (its native module beside its Python files).
  local exported="" package=bazel-out/k8-fastbuild/bin/tools/python/lathe/_lathe.so
  if [ -f "$package" ]; then
    local stage="$ROOT/lathe-out/python"
    rm -rf "$stage" && mkdir -p "$stage/lathe"
    cp tools/python/lathe/*.py "$package" "$stage/lathe/"
    exported="$ROOT/lathe-out/consumer-exported"
    rm -rf "$exported" "$exported-io"
    if ! PYTHONPATH="$stage" "$(command -v "${LATHE_PYTHON:-python3}")" \
      tools/python/examples/export_mlp.py "$exported"; then
      log "exporting the consumer's PyTorch model failed"
      FAILED=$((FAILED + 1))
    fi
  else
    log "no Python package built (no PyTorch): the consumer's exported-model test skips"
  fi
  stage_done "consumer artifact" "$start" 60
  run_tests "consumer workspace" 120 "$ROOT/tools/consumer_example" \
    --test_env=LATHE_CONSUMER_ARTIFACT="$artifact" \
    --test_env=LATHE_CONSUMER_EXPORTED="$exported" //...
  (cd "$ROOT/tools/consumer_example" && bazel shutdown) >/dev/null 2>&1
  print_stages
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

case "${1:-}" in
  main) ensure_packages && job_main ;;
  test) ensure_packages && ensure_torch && job_test ;;
  *)
    echo "usage: bash tools/dev.sh main|test" >&2
    exit 2
    ;;
esac
