#!/usr/bin/env python3
"""Kernel Lab: `python build.py` renders public/ from site_src/ and runs/; `--run` measures first."""
import os
import sys

from kernellab.cli import main

if __name__ == "__main__":
    code = main(process_ends=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written and the worker processes are gone: ending here skips freeing the
    # millions of objects a large build holds, a few tenths of a second of nothing.
    os._exit(code)
