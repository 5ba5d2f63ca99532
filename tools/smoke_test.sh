#!/bin/bash
# Runs lathe_smoke as the README does and checks what it prints.
set -uo pipefail
smoke=$1
out=$("$smoke" --gemm_size=16) || { echo "lathe_smoke failed: $out"; exit 1; }
echo "$out"
grep -q '^lathe smoke: eigen  ok: 16x16 GEMM matches' <<<"$out" || exit 1
grep -q '^lathe smoke: nvrtc  ok: ' <<<"$out" || exit 1
grep -q '^lathe smoke: abseil ok: ' <<<"$out" || exit 1

err=$("$smoke" --gemm_size=0 2>&1) && { echo "a bad --gemm_size must fail"; exit 1; }
[ "$err" = "lathe smoke: error: --gemm_size must be in [1, 2048], got 0" ] ||
  { echo "unexpected error text: $err"; exit 1; }
echo "ok"
