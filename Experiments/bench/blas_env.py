"""numpy at its best on the machine it runs on. OpenBLAS picks its kernel for the CPU unless
OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE say otherwise, and some machines set them (this project's
set OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512), which hands numpy an AVX2 kernel on an
AVX-512 core: 31 ms instead of 20 for width_batch.py's W = 1024, batch 512 numpy step on the Zen 5
kind. The benchmarks compare against numpy's own choice, so they run without the two."""
import os
import sys

OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def without_overrides(env=None):
    """`env` (default: this process's) without the variables that override OpenBLAS's choice."""
    return {k: v for k, v in (os.environ if env is None else env).items() if k not in OVERRIDES}


def reexec_without_overrides():
    """Runs this script again without them, before anything loads OpenBLAS (it reads them once)."""
    if any(k in os.environ for k in OVERRIDES):
        os.execve(sys.executable, [sys.executable] + sys.argv, without_overrides())
