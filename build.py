#!/usr/bin/env python3
"""Kernel Lab: `python build.py` renders public/ from site_src/ and runs/; `--run` measures first."""
import os
import sys

# numpy's OpenBLAS starts a thread per CPU that spins after each call; matplotlib's few tiny
# matrix products gain nothing from it, and on a 2-CPU machine the spinning takes time from the
# build's two processes. Set before numpy is imported, here or in the worker it forks.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kernellab.cli import main  # noqa: E402

if __name__ == "__main__":
    code = main(process_ends=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written and the worker processes are gone: ending here skips freeing the
    # millions of objects a large build holds, a few tenths of a second of nothing.
    os._exit(code)
