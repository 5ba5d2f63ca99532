#!/usr/bin/env bash
# Runs one of the lathe package's Python tests: `run_python_test.sh PYTHON
# SCRIPT`, with the interpreter that has PyTorch (torch_configure found it)
# and the package as it is in the source tree (tools/python/lathe, its
# native module built beside it in runfiles).
set -euo pipefail
python=$1
script=$2
root="${TEST_SRCDIR:?}/lathe"
export PYTHONPATH="$root/tools/python"
export TMPDIR="${TEST_TMPDIR:?}"
export LATHE_CACHE_DIR="$TEST_TMPDIR/lathe-cache"
# One thread for eager PyTorch and lathe's kernels: the tests compare values,
# never times, and share the machine with other tests.
export OMP_NUM_THREADS=1
exec "$python" "$root/$script"
