"""Make the repository root importable (`kernels.triton_softmax`) however pytest is started."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
