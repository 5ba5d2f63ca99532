# @local_torch: the Python interpreter's headers and PyTorch's C++ headers
# and libraries, from the interpreter torch_configure found (a pip install of
# torch). Only //tools/python's native module uses them: no other target
# depends on PyTorch.
package(default_visibility = ["//visibility:public"])

exports_files(["torch_config.bzl"])

cc_library(
    name = "python_headers",
    hdrs = glob(["python_include/**/*.h"]),
    includes = ["python_include"],
)

cc_library(
    name = "torch_python",
    hdrs = glob(["torch_include/**/*.h", "torch_include/**/*.cuh"]),
    includes = [
        "torch_include",
        "torch_include/torch/csrc/api/include",
    ],
    defines = ["_GLIBCXX_USE_CXX11_ABI=%{cxx11_abi}"],
    linkopts = [
        "-L%{torch_lib}",
        "-Wl,-rpath,%{torch_lib}",
        "-ltorch_python",
        "-ltorch",
        "-ltorch_cpu",
        "-lc10",
    ],
    deps = [":python_headers"],
)
