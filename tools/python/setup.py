"""Builds and installs the `lathe` package from lathe's checkout:

    pip install --no-build-isolation ./tools/python

The native module (lathe/_lathe.so) is built by Bazel, the one build lathe
has: `bazel build --compilation_mode=opt //tools/python:lathe/_lathe.so` in
the checkout, against the PyTorch that this interpreter imports
(LATHE_BAZEL_FLAGS replaces the flags; "" builds Bazel's default,
fastbuild). Installing registers the "lathe" backend with Dynamo through the
torch_dynamo_backends entry point: torch.compile(backend="lathe") works
without `import lathe`.
"""

import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = "//tools/python:lathe/_lathe.so"


def bazel_env():
    """This environment, less what a pip build environment adds (its
    PYTHONPATH hides the site-packages torch is in), with LATHE_PYTHON
    naming this interpreter for Bazel's torch_configure."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    env["LATHE_PYTHON"] = sys.executable
    return env


class BuildWithBazel(build_py):
    def run(self):
        super().run()
        if not os.path.exists(os.path.join(ROOT, "WORKSPACE")):
            sys.exit(f"lathe: {ROOT} is not lathe's checkout; install with pip install ./tools/python from it")
        flags = os.environ.get("LATHE_BAZEL_FLAGS", "--compilation_mode=opt").split()
        env = bazel_env()
        subprocess.run(["bazel", "build", *flags, TARGET], cwd=ROOT, env=env, check=True)
        bin_dir = subprocess.run(["bazel", "info", *flags, "bazel-bin"], cwd=ROOT, env=env, check=True,
                                 capture_output=True, text=True).stdout.strip()
        built = os.path.join(bin_dir, "tools", "python", "lathe", "_lathe.so")
        if not os.path.exists(built):
            sys.exit(f"lathe: Bazel built no {built}: is PyTorch importable by {sys.executable}?")
        dest = os.path.join(self.build_lib, "lathe", "_lathe.so")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it holds a native module
        return True


setup(
    name="lathe",
    version="0.1.0",
    description="lathe, an ahead-of-time tensor compiler, as a torch.compile backend",
    packages=["lathe"],
    python_requires=">=3.9",
    install_requires=["torch"],
    cmdclass={"build_py": BuildWithBazel},
    distclass=BinaryDistribution,
    entry_points={"torch_dynamo_backends": ["lathe = lathe:backend"]},
    zip_safe=False,
)
