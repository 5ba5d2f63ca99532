"""Prints where the Python interpreter's headers and PyTorch's C++ headers and
libraries are, one `key=value` per line, for torch_configure. Exits non-zero
with one line on stderr when PyTorch cannot be imported."""

import os
import sys
import sysconfig

try:
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
    sys.stderr.write(f"PyTorch cannot be imported by {sys.executable}: {e}\n")
    sys.exit(1)

root = os.path.dirname(torch.__file__)
print("python=" + sys.executable)
print("python_include=" + sysconfig.get_paths()["include"])
print("torch_include=" + os.path.join(root, "include"))
print("torch_lib=" + os.path.join(root, "lib"))
print("torch_version=" + torch.__version__)
print("cxx11_abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
