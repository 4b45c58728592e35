"""Probe: whole rows in registers without padding to a power of two.

The rows kernel holds a row as one [BLOCK] tensor, BLOCK = next_pow2(N): at N = 12,800 a fifth of
its lanes are padding (16,384), at 3,000 a quarter (4,096), and every padded lane still executes
the exp, max and sum. The H200's 2-byte rows kernel is short of copy speed exactly there (81% at
12,800 against 90% at 16,384), so: hold the row as up to three power-of-two chunks that tile it
(12,800 = 8,192 + 4,096 + 512; 3,000 = 2,048 + 512 + 512, the last one rounded up) and see
whether the time follows the lanes. Every variant is checked against float64 on every element,
then timed as build.py --run times; prints a table, and writes $OUT/probe_rows_chunks.json.

    python scripts/probe_rows_chunks.py                              # on a CUDA machine
    TRITON_INTERPRET=1 python scripts/probe_rows_chunks.py check     # correctness, on the CPU
"""
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402


@triton.jit
def _chunk(input_ptr, row_offsets, row_mask, start, n_cols, CHUNK: tl.constexpr):
    """(values, column indices) of one chunk of columns [start, start + CHUNK) of the program's rows."""
    cols = start + tl.arange(0, CHUNK)[None, :]
    x = tl.load(input_ptr + row_offsets + cols, mask=row_mask & (cols < n_cols), other=float("-inf"))
    return x.to(tl.float32), cols


@triton.jit
def _rows_chunked_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                             ROWS_PER_PROGRAM: tl.constexpr, CHUNK_0: tl.constexpr, CHUNK_1: tl.constexpr,
                             CHUNK_2: tl.constexpr, ALIGN: tl.constexpr):
    """The rows kernel with the row held as up to three power-of-two chunks (CHUNK_1, CHUNK_2: 0 for none)."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    row_mask = (rows < n_rows)[:, None]
    rows64 = rows.to(tl.int64)[:, None]
    in_offsets = rows64 * input_row_stride
    out_offsets = rows64 * output_row_stride
    x0, cols0 = _chunk(input_ptr, in_offsets, row_mask, 0, n_cols, CHUNK_0)
    row_max = tl.max(x0, axis=1)
    if CHUNK_1 > 0:
        x1, cols1 = _chunk(input_ptr, in_offsets, row_mask, CHUNK_0, n_cols, CHUNK_1)
        row_max = tl.maximum(row_max, tl.max(x1, axis=1))
    if CHUNK_2 > 0:
        x2, cols2 = _chunk(input_ptr, in_offsets, row_mask, CHUNK_0 + CHUNK_1, n_cols, CHUNK_2)
        row_max = tl.maximum(row_max, tl.max(x2, axis=1))
    e0 = tl.exp(x0 - row_max[:, None])
    row_sum = tl.sum(e0, axis=1)
    if CHUNK_1 > 0:
        e1 = tl.exp(x1 - row_max[:, None])
        row_sum += tl.sum(e1, axis=1)
    if CHUNK_2 > 0:
        e2 = tl.exp(x2 - row_max[:, None])
        row_sum += tl.sum(e2, axis=1)
    inv = (1.0 / row_sum)[:, None]
    out_ty = output_ptr.dtype.element_ty
    tl.store(output_ptr + out_offsets + cols0, (e0 * inv).to(out_ty), mask=row_mask & (cols0 < n_cols))
    if CHUNK_1 > 0:
        tl.store(output_ptr + out_offsets + cols1, (e1 * inv).to(out_ty), mask=row_mask & (cols1 < n_cols))
    if CHUNK_2 > 0:
        tl.store(output_ptr + out_offsets + cols2, (e2 * inv).to(out_ty), mask=row_mask & (cols2 < n_cols))


def chunks_of(n_cols: int) -> tuple:
    """Up to three powers of two that cover n_cols: the binary digits from the top, the last rounded up."""
    out, left = [], n_cols
    while left > 0 and len(out) < 2:
        out.append(1 << (left.bit_length() - 1))
        left -= out[-1]
    if left > 0:
        out.append(triton.next_power_of_2(left))
    return tuple(out + [0] * (3 - len(out)))


def chunked_forward(rows_per_program, num_warps):
    """A forward callable: the chunked rows kernel with this tile."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        c0, c1, c2 = chunks_of(n_cols)
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        sm._launch(_rows_chunked_fwd_kernel, (triton.cdiv(n_rows, rows_per_program),), y, x, x.stride(0),
                   y.stride(0), n_rows, n_cols, ROWS_PER_PROGRAM=rows_per_program, CHUNK_0=c0, CHUNK_1=c1,
                   CHUNK_2=c2, ALIGN=align, num_warps=num_warps)
        return y
    return run


SHAPES = [("float16", 12800), ("bfloat16", 12800), ("float32", 12800), ("float16", 3000), ("bfloat16", 3000),
          ("float32", 3000), ("float16", 6000), ("float16", 24000), ("float16", 16384)]
TILES = [(1, 4), (1, 8), (1, 16), (1, 32), (2, 8), (2, 16)]


def check_on_cpu() -> None:
    """Odd shapes, -inf and fully masked rows, against float64."""
    torch.manual_seed(0)
    for n in (1, 7, 100, 300, 1000, 3000):
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            x = (torch.randn(5, n) * 3).to(dtype)
            x[1, : max(1, n // 3)] = float("-inf")
            x[3] = float("-inf")
            ref = torch.softmax(x.double(), -1)
            for rows, warps in ((1, 1), (2, 1)):
                y = chunked_forward(rows, warps)(x)
                ok = torch.allclose(y.double(), ref, atol=2e-3, rtol=1e-2, equal_nan=True)
                assert ok, (n, dtype, rows, chunks_of(n))
        print(n, chunks_of(n), "ok", flush=True)


def main() -> None:
    """Copy, dispatcher and the chunked kernel's tiles per shape."""
    if sys.argv[1:] == ["check"]:
        check_on_cpu()
        return
    import probe_long_rows as p

    p.warm_up_gpu()
    out = []
    for dtype, n in SHAPES:
        variants = [(f"chunked {chunks_of(n)} {r}x{w}w", chunked_forward(r, w)) for r, w in TILES
                    if r * sum(chunks_of(n)) <= 64 * 32 * w]
        p.forward_configs_probe("chunks", [n], variants, out, dtypes=[dtype])
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_rows_chunks.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
