"""geotb-torch: geotb's hierarchical EF-SGD (hier_ef_topk_int8, hierarchical) for a PyTorch DDP job.

    python3 -m pip install --no-build-isolation --break-system-packages ./python

(Debian's python3 with python3-torch; ci/build.sh runs it.) The C++ extension compiles geotb's
compression kernels (../kernels, torch-free) with the flags the engine's build uses for them
(-ffp-contract=off), so the hook's messages are the engine's bit for bit.
"""
import glob
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = [os.path.relpath(p, HERE) for p in
           sorted(glob.glob(os.path.join(ROOT, "kernels", "*.cc")) + glob.glob(os.path.join(ROOT, "kernels", "cpu", "*.cc")))]

setup(
    name="geotb-torch",
    version="0.1.0",
    description="geotb's hierarchical error-feedback top-k + INT8 synchronisation as a DDP communication hook",
    packages=["geotb_torch"],
    ext_modules=[CppExtension(
        "geotb_torch._C",
        ["geotb_torch/csrc/ext.cc"] + KERNELS,
        include_dirs=[ROOT, "/usr/include/torch/csrc/api/include"],
        libraries=["z"],
        extra_compile_args=["-O3", "-std=c++20", "-ffp-contract=off"],
    )],
    cmdclass={"build_ext": BuildExtension},
    python_requires=">=3.9",
)
