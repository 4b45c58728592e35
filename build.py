#!/usr/bin/env python3
"""Kernel Lab: `python build.py` renders public/ from site_src/ and runs/; `--run` measures first."""
import sys

from kernellab.cli import main

if __name__ == "__main__":
    sys.exit(main())
