#!/usr/bin/env bash
# Stages, on this machine (Bazel, no GPU), what tools/gpu/check.sh runs on a
# GPU machine (no Bazel, no network): the binaries built with -c opt, the
# shared libraries they load that the GPU machine may lack (lathe's own,
# Abseil, oneDNN, hiredis, OpenSSL; not glibc, libstdc++ or libgomp, which
# it has, newer), and the data their runfiles hold, packed as
# .gpu/stage.tar.xz (or $1/stage.tar.xz), which git ignores and the device
# tool carries (carry: [".gpu"]). Under 64 MiB.
#
#   bash tools/gpu/prepare.sh            # then, on the GPU machine:
#   bash tools/gpu/check.sh "$OUT"
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-.gpu}
targets=(
  //tools:corpus_cpu_test
  //tools/bench:cuda_benchmark
  //driver:compile_cuda_test
  //driver:cuda_graphs_test
  //runtime/cuda:nvrtc_test
  //runtime/cuda:driver_api_test
  //runtime/cuda:cuda_storage_test
  //runtime/cuda:cublaslt_test
  //runtime/cuda:cudnn_test
  //runtime/cuda:cuda_kernels_test
  //runtime/cuda:device_routines_test
)
bazel build -c opt --jobs=2 "${targets[@]}"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/runfiles/lathe"
for t in "${targets[@]}"; do
  path=${t#//}
  bin=bazel-bin/${path/://}
  cp "$bin" "$stage/bin/"
  # Every library it loads but glibc's, libstdc++'s and libgomp's.
  ldd "$bin" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|libgomp)\.so|ld-linux' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
done
chmod -R u+w "$stage"
strip "$stage"/bin/* && strip --strip-unneeded "$stage"/lib/*
# The data the binaries read (their runfiles): the corpora, the benchmark's
# graph, the driver test's stand-in libcuda, the emulated kernels.
for d in ir/testdata/graphs aot/testdata/aot_corpus tools/bench/graphs; do
  mkdir -p "$stage/runfiles/lathe/$d"
  cp -L "$d"/*.txt "$stage/runfiles/lathe/$d/"
done
for t in driver_api_test cuda_kernels_test; do
  cp -rL "bazel-bin/runtime/cuda/$t.runfiles/lathe/runtime" \
    "$stage/runfiles/lathe/"
done
rm -rf "$dest"
mkdir -p "$dest"
tar -cJf "$dest/stage.tar.xz" -C "$stage" .
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
size=$(du -sm "$dest" | cut -f1)
echo "staged $dest/stage.tar.xz: ${size} MiB ($(du -sm "$stage" | cut -f1) MiB unpacked)"
if [ "$size" -ge 60 ]; then
  echo "prepare.sh: $dest is ${size} MiB, too near the device tool's 64 MiB" >&2
  exit 1
fi
