"""Probe: the backward's whole-rows kernel with y and dy kept in their 2-byte type across the row's
reduction (the product's _rows_bwd_kernel since round 24, notes/kernels.md) against the same kernel holding
them in float32 (before round 24), at several tiles, against the dispatcher.

Exploration, not evidence. Held in float32, a 32-warp program at 32,768 2-byte columns needs 64 float32
values a thread and spills; the product widens y and dy for the dot product and again, by an operation the
compiler cannot merge with the first (_widen_kept), for dx. Every variant is checked against float64 on
every element, then timed beside the dispatcher and a 2-read-1-write add (backward_configs_probe).
Labels: "packed" is the product's kernel, "rows" the float32-holding one.

    python scripts/probe_backward_rows.py [rows|rest]   # on a CUDA machine; $OUT/probe_backward_rows.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import backward_configs_probe, run_probes  # noqa: E402


@triton.jit
def _rows_bwd_float32_kernel(grad_input_ptr, output_ptr, grad_output_ptr, grad_input_row_stride,
                             output_row_stride, grad_output_row_stride, n_rows, n_cols,
                             ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr):
    """_rows_bwd_kernel before round 24: y and dy widened once and held in float32."""
    n_cols = n_cols // ALIGN * ALIGN
    grad_input_row_stride = grad_input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    grad_output_row_stride = grad_output_row_stride // ALIGN * ALIGN
    rows64, cols, mask = sm._program_rows(n_rows, n_cols, ROWS_PER_PROGRAM, BLOCK_SIZE)
    y = tl.load(output_ptr + rows64 * output_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(grad_output_ptr + rows64 * grad_output_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(y * dy, axis=1)[:, None])
    tl.store(grad_input_ptr + rows64 * grad_input_row_stride + cols, dx.to(grad_input_ptr.dtype.element_ty),
             mask=mask)


def rows_backward(rows_per_program: int, warps: int, packed: bool):
    """A backward callable: the product's rows kernel (packed) or the float32-holding one, at this tile."""
    def run(y, dy):
        dx = torch.empty_like(y)
        n_rows, n_cols = y.shape
        align = sm._vector_align(y.element_size(), n_cols, dx.stride(0), y.stride(0), dy.stride(0))
        args = (dx, y, dy, dx.stride(0), y.stride(0), dy.stride(0), n_rows, n_cols)
        kwargs = dict(ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=triton.next_power_of_2(n_cols), ALIGN=align,
                      num_warps=warps)
        if packed:
            sm._launch(sm._rows_bwd_kernel, (triton.cdiv(n_rows, rows_per_program),), *args,
                       PTX=sm._inline_ptx(y), **kwargs)
        else:
            sm._launch(_rows_bwd_float32_kernel, (triton.cdiv(n_rows, rows_per_program),), *args, **kwargs)
        return dx
    return run


NS = [1024, 4096, 8192, 12800, 16384, 24000, 32768]
# (rows per program, warps): the table's tiles for 1,024-8,192 (2x4, 1x4, 1x8, 1x16) and wider ones
TILES = [(2, 4), (1, 4), (1, 8), (1, 16), (1, 32), (2, 32)]
MAX_LANES_PER_THREAD = 64  # of each tensor: 128 float32 values a thread is past any register budget


def variants(n: int, dtype: str) -> list:
    """(label, backward) for each tile of TILES that fits, product kernel and (2-byte types) packed."""
    lanes = triton.next_power_of_2(n)
    out = []
    for rows, warps in TILES:
        if rows * lanes // (32 * warps) > MAX_LANES_PER_THREAD:
            continue
        out.append((f"rows {rows}x{warps}w", rows_backward(rows, warps, False)))
        if dtype != "float32":
            out.append((f"packed {rows}x{warps}w", rows_backward(rows, warps, True)))
    return out


def rows_probe(out: list, ns=NS, dtypes=("float16", "bfloat16", "float32")) -> None:
    """Product and packed rows backward at each tile, per N and dtype."""
    for n in ns:
        for dtype in dtypes:
            backward_configs_probe("backward-rows", [n], variants(n, dtype), out, [dtype])


def rest_probe(out: list) -> None:
    """The rows the first H200 probe left out: short ones, and float32 between 16,384 and 32,768 columns."""
    rows_probe(out, [1024, 4096, 8192])
    rows_probe(out, [20000, 28000], ["float32"])


if __name__ == "__main__":
    run_probes({"rows": rows_probe, "rest": rest_probe}, sys.argv[1:] or ["rows"], "probe_backward_rows.json")
