"""Probe: long rows through TMA. Does a tile-stream kernel whose loads are TMA bulk copies
(pipelined into shared memory by tl.range(num_stages=...)) reach copy speed where the plain-load
tile-stream stops at 60-85%?

Exploration for tuning SOFTMAX_PLANS, not evidence (see scripts/probe_long_rows.py, whose
checking and timing it reuses): every variant is checked against float64 on every element, then
timed as build.py --run times. Prints a table; with OUT set, writes $OUT/probe_tma.json.

The kernel views a contiguous [M, N] tensor (N a multiple of the 16-byte vector) as [M*N/VEC, VEC]
rows of one vector each, so a TMA box of [R, VEC] is R vectors of one softmax row, and a segment
of a row is a range of view rows. (First version: one vector per view row; now W elements, W*size
bytes wide, so N must be a multiple of W.) Pass 1 reduces a segment (one running (max, sum) per vector, as
the tile kernel does); partials are exchanged as in tile-stream; pass 2 re-reads the segment
(from L2, last step first) and writes y with plain 16-byte stores, or TMA stores (TMA_STORE).

    python scripts/probe_tma.py            # on a CUDA machine
    TRITON_INTERPRET=1 python scripts/probe_tma.py check   # correctness only, on the CPU
"""
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import _await_row, _combine_partials, _pack, _vector_online  # noqa: E402


@triton.jit
def _tma_segment_max_sum(in_desc, first, end, R: tl.constexpr, W: tl.constexpr, VEC: tl.constexpr,
                         STAGES: tl.constexpr):
    """(max, sum of exp(x - max)) over view rows [first, end); (-inf, 0) if all -inf."""
    vec_max = tl.full([R * W // VEC], float("-inf"), tl.float32)
    vec_sum = tl.zeros([R * W // VEC], tl.float32)
    for v in tl.range(first, end, R, num_stages=STAGES):
        x = in_desc.load([v, 0])
        # the last box may reach into the next segment or row: those vectors count as -inf
        x = tl.where((v + tl.arange(0, R) < end)[:, None], x, float("-inf")).to(x.dtype)
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, tl.reshape(x, [R * W // VEC, VEC]))
    segment_max = tl.max(vec_max, axis=0)
    safe_max = tl.where(segment_max == float("-inf"), 0.0, segment_max)
    return segment_max, tl.sum(vec_sum * tl.exp(vec_max - safe_max), axis=0)


@triton.jit
def _tma_segment_write(out_ptr, in_desc, out_desc, first, end, row_max, inv_row_sum, R: tl.constexpr,
                       W: tl.constexpr, STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    """y = exp(x - row_max) * inv_row_sum over view rows [first, end), the last box first."""
    n_steps = tl.cdiv(end - first, R)
    vectors = tl.arange(0, R)
    lanes = tl.arange(0, W)[None, :]
    for k in tl.range(0, n_steps, num_stages=STAGES):
        v = first + (n_steps - 1 - k) * R
        x = in_desc.load([v, 0]).to(tl.float32)
        y = (tl.exp(x - row_max) * inv_row_sum).to(out_ptr.dtype.element_ty)
        if TMA_STORE and v + R <= end:
            out_desc.store([v, 0], y)
        else:
            rows = v + vectors
            tl.store(out_ptr + rows.to(tl.int64)[:, None] * W + lanes, y, mask=(rows < end)[:, None],
                     cache_modifier=".cs")


@triton.jit
def _tma_stream_fwd_kernel(out_ptr, in_desc, out_desc, slots_ptr, n_rows, view_cols, n_segments, segment_rows,
                           max_polls, R: tl.constexpr, W: tl.constexpr, VEC: tl.constexpr, SEGMENTS_BLOCK: tl.constexpr,
                           STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    """tile-stream with TMA loads: (row, segment) items on a persistent grid."""
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row = item // n_segments
        row_first = row * view_cols
        first = row_first + (item % n_segments) * segment_rows
        end = tl.minimum(first + segment_rows, row_first + view_cols)
        segment_max, segment_sum = _tma_segment_max_sum(in_desc, first, end, R, W, VEC, STAGES)
        if SEGMENTS_BLOCK == 1:
            row_max = segment_max
            inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        else:
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
            packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK)
            if n_missing > 0:
                for sibling in range(0, n_segments):
                    slot = slots_ptr + row * n_segments + sibling
                    if tl.load(slot, volatile=True) == 0:
                        s_first = row_first + sibling * segment_rows
                        s_max, s_sum = _tma_segment_max_sum(in_desc, s_first,
                                                            tl.minimum(s_first + segment_rows, row_first + view_cols),
                                                            R, W, VEC, STAGES)
                        tl.atomic_xchg(slot, _pack(s_max, s_sum), sem="relaxed")
                packed = tl.load(slots_ptr + row * n_segments + tl.arange(0, SEGMENTS_BLOCK), mask=in_row,
                                 other=-1, volatile=True)
            row_max, inv_row_sum = _combine_partials(packed, in_row)
        _tma_segment_write(out_ptr, in_desc, out_desc, first, end, row_max, inv_row_sum, R, W, STAGES, TMA_STORE)


def tma_stream_forward(config):
    """A forward callable for one config: (box rows R, view-row bytes, warps, programs per SM, segment bytes,
    stages, TMA store)."""
    r, row_bytes, warps, progs, segment_bytes, stages, tma_store = config

    def run(x):
        n_rows, n_cols = x.shape
        vec = 16 // x.element_size()
        w = row_bytes // x.element_size()
        assert x.is_contiguous() and n_cols % w == 0 and x.data_ptr() % 16 == 0
        y = torch.empty_like(x)
        view_cols = n_cols // w
        segment_bytes_ = sm._few_rows_segment(segment_bytes, n_rows, n_cols * x.element_size(),
                                              progs * sm._sm_count(x.device))
        segment_rows = max(r, int(segment_bytes_) // row_bytes // r * r)
        n_segments = triton.cdiv(view_cols, segment_rows)
        in_desc = TensorDescriptor.from_tensor(x.view(-1, w), block_shape=[r, w])
        out_desc = TensorDescriptor.from_tensor(y.view(-1, w), block_shape=[r, w])
        slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=x.device)
        n_items = n_rows * n_segments
        maxnreg = min(255, 65536 // (progs * warps * 32) // 8 * 8)
        grid = (min(n_items, progs * sm._sm_count(x.device)),)
        kwargs = dict(R=r, W=w, VEC=vec, SEGMENTS_BLOCK=sm._segments_block(n_segments), STAGES=stages,
                      TMA_STORE=tma_store, num_warps=warps)
        if not sm._interpreting():
            kwargs["maxnreg"] = maxnreg
        sm._launch(_tma_stream_fwd_kernel, grid, y, in_desc, out_desc, slots, n_rows, view_cols, n_segments,
                   segment_rows, sm._max_polls(), **kwargs)
        return y
    return run


# (box rows, view-row bytes, warps, programs per SM, segment bytes, stages, TMA store). Round 6's
# first probe used 16-byte view rows (one vector): every config capped at ~45% of copy on the
# H200 (notes/probes/2026-11-22-h200-tma-narrow.json), so the rows are now 128-512 bytes.
CONFIGS = [
    (64, 128, 8, 4, 65536, 4, False),
    (32, 256, 8, 4, 65536, 4, False),
    (16, 512, 8, 4, 65536, 4, False),
    (64, 128, 8, 4, 131072, 6, False),
    (32, 128, 4, 8, 32768, 4, False),
    (128, 128, 8, 2, 262144, 4, False),
    (64, 256, 16, 2, 131072, 4, False),
    (64, 128, 8, 4, 65536, 4, True),
    (32, 256, 8, 3, 65536, 8, False),
    (32, 512, 16, 2, 131072, 3, False),
]
NS = [65536, 131072, 262144, 1048576]


def check_on_cpu() -> None:
    """Every config on small odd shapes against float64 (interpreter)."""
    torch.manual_seed(0)
    sm._INTERPRETER_SM_COUNT = 2
    for dtype in (torch.float16, torch.float32):
        vec = 16 // torch.empty((), dtype=dtype).element_size()
        for rows, cols in ((3, vec * 4 * 37), (1, vec * 4 * 300), (5, vec * 4 * 9)):
            x = (torch.randn(rows, cols) * 3).to(dtype)
            x[0, :vec * 5] = float("-inf")
            if rows > 2:
                x[2] = float("-inf")
            ref = torch.softmax(x.double(), -1)
            for config in [(4, 16, 1, 2, 16 * 8, 2, False), (2, 32, 1, 1, 16 * 4, 2, True), (2, 64, 1, 1, 1 << 20, 2, True)]:
                y = tma_stream_forward(config)(x)
                ok = torch.allclose(y.double(), ref, atol=2e-3, rtol=1e-2, equal_nan=True)
                print(dtype, rows, cols, config, "ok" if ok else "WRONG", flush=True)
                assert ok


def main() -> None:
    """Probe on the GPU: copy, dispatcher, then every config per N and dtype."""
    if sys.argv[1:] == ["check"]:
        check_on_cpu()
        return
    import probe_long_rows as p

    p.warm_up_gpu()
    out = []
    p.forward_configs_probe("tma", NS, [(f"tma {c}", tma_stream_forward(c)) for c in CONFIGS], out)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_tma.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
