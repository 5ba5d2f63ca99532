# @local_cuda: the CUDA toolkit found by cuda_configure (%{cuda_lib_dir}).
# Headers and the host libraries lathe links: NVRTC, cudart and cuBLAS. The
# driver library (libcuda.so.1) exists only where a GPU is; lathe loads it with
# dlopen and never links it.
package(default_visibility = ["//visibility:public"])

exports_files(["cuda_config.bzl"])

cc_library(
    name = "cuda_headers",
    hdrs = glob([
        "include/*.h",
        "include/*.hpp",
        "include/crt/**",
    ]),
    defines = ["LATHE_HAS_CUDA_TOOLKIT=1"],
    includes = ["include"],
)

# Libraries are linked by path with an rpath to the toolkit, so NVRTC finds
# libnvrtc-builtins next to itself at run time.
cc_library(
    name = "nvrtc",
    linkopts = [
        "-L%{cuda_lib_dir}",
        "-Wl,-rpath,%{cuda_lib_dir}",
        "-lnvrtc",
    ],
    deps = [":cuda_headers"],
)

cc_library(
    name = "cudart",
    linkopts = [
        "-L%{cuda_lib_dir}",
        "-Wl,-rpath,%{cuda_lib_dir}",
        "-lcudart",
    ],
    deps = [":cuda_headers"],
)

cc_library(
    name = "cublas",
    linkopts = [
        "-L%{cuda_lib_dir}",
        "-Wl,-rpath,%{cuda_lib_dir}",
        "-lcublas",
        "-lcublasLt",
    ],
    deps = [":cudart"],
)
