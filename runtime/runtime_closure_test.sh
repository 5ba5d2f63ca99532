#!/usr/bin/env bash
# The runtime library's dependency closure (genquery :runtime_closure) holds
# nothing of the compiler: no target of ir/, aot/, passes/, codegen/,
# symbolic/ or tools/.
set -u
closure=$1
if ! grep -q '^//runtime:artifact$' "$closure"; then
  echo "FAIL: the closure does not even hold //runtime:artifact" >&2
  exit 1
fi
bad=$(grep -E '^//(ir|aot|passes|codegen|symbolic|tools)[:/]' "$closure")
if [ -n "$bad" ]; then
  echo "FAIL: //runtime depends on the compiler:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "PASS: $(grep -c '^//' "$closure") lathe targets, none of the compiler"
