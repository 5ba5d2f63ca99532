#!/usr/bin/env bash
# aot/runtime_wrappers_generated.cc is what //aot:emit_runtime_wrappers
# prints today (it is checked in so no CI run builds the generator twice).
#   runtime_wrappers_generated_test.sh EMIT_RUNTIME_WRAPPERS CHECKED_IN_FILE
set -uo pipefail
emit=$1
checked_in=$2
if ! diff -u "$checked_in" <("$emit") >"$TEST_TMPDIR/diff" 2>&1; then
  head -40 "$TEST_TMPDIR/diff"
  echo "aot/runtime_wrappers_generated.cc is stale; regenerate it with:" >&2
  echo "  bazel run //aot:emit_runtime_wrappers > aot/runtime_wrappers_generated.cc" >&2
  exit 1
fi
echo "aot/runtime_wrappers_generated.cc is current"
