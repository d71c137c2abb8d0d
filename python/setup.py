"""setuptools hook of pyproject.toml: a regular (not editable) install copies
the kernel bundle that CMake's ``xent-python-kernels`` compiled
(``<build>/python/xent-kernels``; ``$XENT_KERNEL_BUNDLE`` names another
directory, empty for none) into the package as ``xent/kernels``, where
xent.runtime.bundle finds it. Without a bundle the package installs as
before and compiles kernels on first use where xent-opt is at hand."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


def _bundle():
    env = os.environ.get("XENT_KERNEL_BUNDLE")
    if env is not None:
        candidates = [env] if env else []
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        build = os.environ.get("XENT_BUILD_DIR") or os.path.join(here, os.pardir, "build")
        candidates = [os.path.join(build, "python", "xent-kernels")]
    return next((c for c in candidates if os.path.isdir(os.path.join(c, "index"))), None)


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        source = _bundle()
        if source is None or getattr(self, "editable_mode", False):
            return  # an editable install finds <build>/python/xent-kernels itself
        target = os.path.join(self.build_lib, "xent", "kernels")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".*"))


setup(cmdclass={"build_py": BuildPyWithKernels})
