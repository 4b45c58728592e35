"""kernels/triton_softmax.py against a float64 torch reference.

CPU: TRITON_INTERPRET=1 python -m pytest tests/test_softmax.py -q   (Triton's interpreter)
GPU: python -m pytest tests/test_softmax.py -q
"""
import importlib
import math
import os
import random
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from tolerances import BACKWARD_TOL, FORWARD_TOL

if os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU, or TRITON_INTERPRET=1 (set before triton is imported) to run the "
                "kernels on Triton's CPU interpreter", allow_module_level=True)

# The module itself (`from kernels import softmax` gives the public function).
sm = importlib.import_module("kernels.triton_softmax")

# Masked lanes compute -inf - -inf = NaN on purpose (and never store it); numpy says so.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = torch.device("cpu" if INTERPRETING else "cuda")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)



def make_input(shape, dtype, seed=0):
    """randn * 3 plus a random offset per row (never zeros; distinct row maxima), cast to dtype."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator) * 3 + 2
    if len(shape) >= 1:
        x = x + torch.randn(tuple(shape[:-1]) + (1,), generator=generator) * 10
    return x.to(dtype).to(DEVICE)


def assert_softmax(actual, x, dim=-1):
    """actual == softmax(x, dim) elementwise within FORWARD_TOL, same dtype/shape, NaN where torch has NaN."""
    assert actual.dtype == x.dtype and actual.shape == x.shape
    atol, rtol = FORWARD_TOL[x.dtype]
    torch.testing.assert_close(actual.double(), torch.softmax(x.double(), dim), atol=atol, rtol=rtol,
                               equal_nan=True)


def assert_grad(actual, expected, dtype, scale=None):
    """actual == expected (float64) within BACKWARD_TOL, NaN where expected has NaN; atol is its fraction of scale
    (default: the largest |expected|)."""
    assert actual.dtype == dtype and actual.shape == expected.shape
    atol_fraction, rtol = BACKWARD_TOL[dtype]
    if scale is None:
        scale = expected.nan_to_num(0.0).abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(actual.double(), expected, atol=atol_fraction * scale, rtol=rtol,
                               equal_nan=True)


def reference_grad(x, dy, dim=-1):
    """d softmax(x)/dx applied to dy, by float64 torch autograd."""
    x64 = x.detach().double().requires_grad_(True)
    torch.softmax(x64, dim).backward(dy.double())
    return x64.grad


# Widths above this are not run at a table row's max_cols (the interpreter is slow there);
# exchange, tile and stream rows are exercised just past their lower threshold and by the
# long-row tests below.
MAX_BOUNDARY_COLS = 65536


def covers(earlier, plan):
    """Whether the earlier SOFTMAX_PLANS row takes every shape that plan would (for an element size both serve)."""
    return (earlier.max_cols >= plan.max_cols and earlier.min_rows_per_sm <= plan.min_rows_per_sm
            and not earlier.exact_cols and (plan.whole_vectors or not earlier.whole_vectors) and (plan.partial_vectors or not earlier.partial_vectors))


def plan_cases(op, dtype):
    """(plan, n_rows, n_cols) hitting every SOFTMAX_PLANS row of op for dtype's element size at its
    max_cols and one past the row before (rows for a larger L2 than this GPU's are out of reach)."""
    sm_count, l2_bytes = sm._sm_count(DEVICE), sm._l2_bytes(DEVICE)
    elem_bytes = dtype.itemsize
    # tma-stream rows take only tensors the TMA can read on a GPU (tests/test_gluon_softmax.py), never these shapes
    cases, plans = [], [p for p in sm.SOFTMAX_PLANS if p.op == op and p.elem_bytes in (0, elem_bytes)
                        and p.min_l2_bytes <= l2_bytes and p.path != "tma-stream"]
    for i, plan in enumerate(plans):
        if any(covers(p, plan) for p in plans[:i]):  # no shape of this element size reaches the row
            continue
        # the band starts past the largest smaller max_cols of an earlier row
        lower = max([int(p.max_cols) for p in plans[:i] if p.max_cols < plan.max_cols], default=0)
        if plan.path == "rows":  # several programs, the last one with rows past the end
            n_rows = max(2 * plan.rows_per_program + 1, plan.min_rows_per_sm * sm_count + 1)
        else:  # enough rows for this row of the table and, for "online", more rows than programs
            n_rows = max(plan.min_rows_per_sm * sm_count + 1, 3)
        if plan.path in ("online", "stream", "tile-stream"):  # streams: one row (few rows); online: 2 per SM
            n_rows = max(plan.min_rows_per_sm * sm_count, 1)
        # an earlier row covering the band that wants more rows: stay below its minimum
        shadowing = [p for p in plans[:i] if p.max_cols >= plan.max_cols and p.min_rows_per_sm > plan.min_rows_per_sm]
        if shadowing:
            n_rows = min(n_rows, min(p.min_rows_per_sm for p in shadowing) * sm_count - 1)
        widths = [lower + 1] + ([int(plan.max_cols)] if plan.max_cols <= MAX_BOUNDARY_COLS else [])
        vec = 16 // elem_bytes
        if plan.whole_vectors:  # the first and the last width of whole 16-byte vectors in the band
            widths = [-(-widths[0] // vec) * vec] + [w // vec * vec for w in widths[1:]]
        elif plan.partial_vectors or any(p.whole_vectors and p.max_cols == plan.max_cols
                                         and p.min_rows_per_sm <= plan.min_rows_per_sm for p in plans[:i]):
            # the row takes, or an earlier row leaves it, only widths that are not whole vectors
            widths = [w - 1 if w % vec == 0 else w for w in widths]
        if plan.exact_cols:  # its one width, in a multiple of its rows, two programs or more
            widths, n_rows = [int(plan.max_cols)], 2 * plan.rows_per_program
        else:  # an earlier row taking exactly this width leaves it the whole vectors below
            widths = [w - vec if any(p.exact_cols and p.max_cols == w for p in plans[:i]) else w for w in widths]
        cases += [pytest.param(plan, n_rows, n_cols, dtype, id=f"{op}-{plan.path}-{n_rows}x{n_cols}-{dtype}")
                  for n_cols in widths]
    return cases


def contiguous_align(n_cols, dtype):
    """ALIGN of a contiguous (rows, n_cols) input and output."""
    return sm._vector_align(dtype.itemsize, n_cols, n_cols, n_cols)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n_cols", [5_001, 8_193, 10_001, 10_233, 10_234, 14_332, 16_385, 20_002, 20_473, 20_474, 27_996,
                                    28_001, 30_004, 32_767, 40_001, 57_343])
def test_rows_not_of_whole_vectors_take_row_tiles_in_whole_vectors(n_cols, dtype):
    """2-byte rows of 4k-57k columns that are not whole 16-byte vectors take row-tiles, read in whole vectors from
    their first aligned element (round 50): to 8,191 tiles of 2,048 lanes in float32; to 10 such tiles (20,473
    columns and the vector's lanes) held in their own type under 64 registers, four programs an SM; beyond, as
    whole-vector rows from 28,001 do: tiles of 4,096 in their own type under 128 registers (round 49)."""
    plan = sm._select_plan("forward", 10**6, n_cols, dtype.itemsize, DEVICE, contiguous_align(n_cols, dtype))
    aligned = sm._select_plan("forward", 10**6, -(-n_cols // 8) * 8, dtype.itemsize, DEVICE, 8)
    assert plan.path == "row-tiles" and not plan.whole_vectors
    if n_cols <= 8191:
        assert (plan.block_size, plan.keep_input, plan.maxnreg) == (2048, False, 0)
    elif n_cols <= 10233:  # 5 tiles: float32 tiles under 64 registers (rounds 52, 55)
        assert (plan.block_size, plan.keep_input, plan.maxnreg) == (2048, False, 64)
    elif n_cols <= 20473:
        assert (plan.block_size, plan.keep_input, plan.maxnreg) == (2048, True, 64)
    else:
        assert (plan.block_size, plan.keep_input, plan.maxnreg) == (4096, True, 128)
    if n_cols <= 28000:
        assert (aligned.path, aligned.block_size, aligned.keep_input) == ("row-tiles", 4096, False)
    else:
        assert aligned == plan


def test_row_tiles_read_rows_not_of_whole_vectors_in_whole_vectors(monkeypatch):
    """The dispatcher's row-tiles launches ask for vector edges: they compile for odd rows whose tensors share a row
    stride and 16-byte-aligned bases, on one more vector's lanes (10,001 columns: 5 tiles of 2,048), and not for
    whole-vector rows or a column-sliced input."""
    launched = []
    monkeypatch.setattr(sm, "_launch", lambda kernel, grid, *args, **kwargs: launched.append(
        (kwargs["VECTOR_EDGES"], kwargs["N_TILES"])))
    base = make_input((4, 10_009), torch.float16)
    for x in (base[:, :10_001].contiguous(), base[:, :10_000].contiguous(), base[:, :10_001]):
        sm.softmax_forward(x)
    assert launched == [(True, 5), (False, 3), (False, 5)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("n_cols", [32_769, 40_001, 57_345, 65_535, 100_001, 131_071, 131_073])
def test_long_rows_not_of_whole_vectors_take_the_tile_kernel_in_whole_vectors(n_cols, dtype):
    """Rows of 57k-131k 2-byte or 32k-65k fp32 columns that are not whole 16-byte vectors take the tile kernel with
    vector edges (round 48: +16% to +36% over tile-stream's one-segment rows on the H200), two vectors a thread;
    2-byte rows with their edge tiles apart from the unmasked inner ones (round 51: +3% to +9%); shorter 2-byte rows
    row-tiles (round 50), longer ones tile-stream, as rows with few rows an SM (fp32 to 65,536 of those: exchange)."""
    vec = 16 // dtype.itemsize
    plan = sm._select_plan("forward", 10**6, n_cols, dtype.itemsize, DEVICE, contiguous_align(n_cols, dtype))
    few = sm._select_plan("forward", 1, n_cols, dtype.itemsize, DEVICE, contiguous_align(n_cols, dtype))
    assert n_cols % vec and few.path == ("exchange" if vec == 4 and n_cols <= 65536 else "tile-stream")
    if vec == 8 and n_cols <= 57344:
        assert (plan.path, plan.keep_input) == ("row-tiles", True)
    elif n_cols <= (131072 if vec == 8 else 65536):
        assert (plan.path, plan.partial_vectors, plan.rows_per_program, plan.edges_apart) == ("tile", True, 2, vec == 8)
    else:
        assert plan.path == "tile-stream"
    # rows of whole vectors there keep their own rows: row-tiles where a row fits the registers, then the tile kernel
    whole = -(-n_cols // vec) * vec
    aligned = sm._select_plan("forward", 10**6, whole, dtype.itemsize, DEVICE, vec)
    if whole <= (57344 if vec == 8 else 40960):
        assert aligned.path == "row-tiles"
    else:
        assert (aligned.path, aligned.partial_vectors) == (("tile", False) if whole <= (131072 if vec == 8 else 65536)
                                                           else ("tile-stream", False))


@pytest.mark.parametrize("n_cols", [4_097, 6_001, 8_191, 8_193, 10_001, 10_237, 10_238, 16_383, 16_385, 20_001, 24_575])
def test_float32_rows_not_of_whole_vectors_take_row_tiles(n_cols):
    """fp32 rows of 4k-24k columns that are not whole 16-byte vectors take row-tiles (tiles of 2,048 lanes to 16,383,
    of 4,096 beyond, as whole-vector rows there), five-tile rows (8,193-10,237) under 64 registers (round 55);
    whole-vector rows to 16,384 stay on the rows kernel, but rows of exactly 4,096 where the L2 is the H100's
    (rows-lanes, round 87)."""
    plan = sm._select_plan("forward", 10**6, n_cols, 4, DEVICE, contiguous_align(n_cols, torch.float32))
    assert (plan.path, plan.block_size) == ("row-tiles", 2048 if n_cols <= 16383 else 4096)
    assert plan.maxnreg == (64 if 8193 <= n_cols <= 10237 else 0)
    whole = n_cols // 4 * 4
    lanes = whole == 4096 and sm._l2_bytes(DEVICE) < sm.L2_60_MB
    expected = "rows-lanes" if lanes else "rows" if whole <= 16384 else "row-tiles"
    assert sm._select_plan("forward", 10**6, whole, 4, DEVICE, 4).path == expected


def test_rows_lanes_takes_only_exact_float32_widths_under_the_h100s_l2(monkeypatch):
    """rows-lanes has no masks: fp32 rows of exactly 2,048 (an even count) or 4,096 columns of whole vectors; a
    column more or less, an odd count at 2,048, 2-byte rows or rows off 16-byte vectors keep the rows kernel. An L2
    of 60 MB (the H200's, where the form runs at 79-84% of copy: round 88) keeps the rows kernel for all of them."""
    def path(n_rows, n_cols, elem_bytes=4, align=None):
        return sm._select_plan("forward", n_rows, n_cols, elem_bytes, DEVICE, align or 16 // elem_bytes).path
    monkeypatch.setattr(sm, "_l2_bytes", lambda device: 50 << 20)
    assert path(10**6, 2048) == path(3, 4096) == path(2, 2048) == "rows-lanes"
    assert path(10**6 + 1, 2048) == path(10**6, 2044) == path(10**6, 4092) == path(10**6, 2048, 2) == "rows"
    assert path(10**6, 2048, 4, align=2) == path(10**6, 4096, 4, align=1) == "rows"
    monkeypatch.setattr(sm, "_l2_bytes", lambda device: sm.L2_60_MB)
    assert path(10**6, 2048) == path(3, 4096) == path(2, 2048) == "rows"


@pytest.mark.parametrize("n_cols", [2048, 4096])
def test_rows_lanes_reads_and_writes_strided_rows(n_cols, poisoned_outputs):
    """Row strides of its own for the input (a slice of wider rows) and the output: every element written, once."""
    x = make_input((6, n_cols + 256), torch.float32)[:, 128:128 + n_cols]
    out = torch.full((6, n_cols + 64), 7.0, device=DEVICE)
    sm._forward_rows_lanes(out[:, :n_cols], x, 2 if n_cols == 2048 else 1, 16)
    assert_softmax(out[:, :n_cols], x)
    assert (out[:, n_cols:] == 7.0).all()
    assert_softmax(sm.softmax_forward(x), x)


@pytest.fixture
def poisoned_outputs(monkeypatch):
    """Every kernel output starts as 1234.5, so an element no program writes fails the comparison."""
    def poisoned(n_rows, n_cols, like):
        return torch.full((n_rows, n_cols), 1234.5, dtype=like.dtype, device=like.device)
    monkeypatch.setattr(sm, "_new_output", poisoned)


# ---------------------------------------------------------------------------------------------
# Dispatcher: every table row, at and just past its thresholds
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("plan,n_rows,n_cols,dtype", [case for dtype in DTYPES for case in plan_cases("forward", dtype)])
def test_forward_plan_boundaries(plan, n_rows, n_cols, dtype, poisoned_outputs):
    assert sm._select_plan("forward", n_rows, n_cols, dtype.itemsize, DEVICE, contiguous_align(n_cols, dtype)) == plan
    x = make_input((n_rows, n_cols), dtype)
    assert_softmax(sm.softmax_forward(x), x)


@pytest.mark.parametrize("plan,n_rows,n_cols,dtype", plan_cases("forward", torch.float16))
def test_float16_log2_domain_holds_at_the_ends_of_the_range(plan, n_rows, n_cols, dtype):
    """float16 takes exp as exp2(x * log2(e) - max * log2(e)) on every path (kernels: LOG2E), with the
    scaled max rounded. Rows near the ends of float16's range put that rounding at its largest
    (max * log2(e) near 94,500, a 2^-8 error) and spread the weight over many values and vectors,
    so a rescale taken against a differently rounded max would show; as would an overflow."""
    generator = torch.Generator().manual_seed(n_cols)
    x = torch.randint(-12, 1, (n_rows, n_cols), generator=generator).to(torch.float64)
    x[0::3] += 2000.0  # integers near 2,000: steps of 1, weight spread over ~12 values
    x[1::3] = 65504.0 + 32.0 * x[1::3]  # float16's top: steps of 32, the max's ties carry the row
    x[2::3] = -65504.0 - 32.0 * x[2::3]  # its bottom, negated: the max is -65,504 + 32k
    x = x.clamp(-65504.0, 65504.0).to(dtype).to(DEVICE)
    assert sm._log2_exp(x) and not sm._log2_guard(x, True)
    assert_softmax(sm.softmax_forward(x), x)


# Compiles tile-stream with its L2 prefetch for sm_90 through Triton and ptxas, without a GPU and
# outside the interpreter (which cannot run inline PTX, so the kernel tests above run without it).
HOPPER_COMPILE = """
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels.triton_softmax as sm
pointer = "*" + sys.argv[1]
signature = {"output_ptr": pointer, "input_ptr": pointer, "slots_ptr": "*i64", "input_row_stride": "i32",
             "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "n_segments": "i32",
             "blocks_per_segment": "i32", "max_polls": "i32", "TILE_ROWS": "constexpr", "SEGMENTS_BLOCK": "constexpr",
             "ALIGN": "constexpr", "VEC": "constexpr", "UNROLL": "constexpr", "LOG2": "constexpr", "GUARD": "constexpr",
             "PREFETCH": "constexpr", "LINE": "constexpr", "POLL_SLEEP": "constexpr", "WAIT_PREFETCH": "constexpr",
             "VECTOR_EDGES": "constexpr", "WRITE_PAIRS": "constexpr"}
vec = 4 if sys.argv[1] == "fp32" else 8
for wait_prefetch in (0, sm.TILE_STREAM_WAIT_PREFETCH[16 // vec]):
    constexprs = dict(TILE_ROWS=2048, SEGMENTS_BLOCK=8, ALIGN=vec, VEC=vec, UNROLL=1, LOG2=vec == 8,
                      GUARD=sys.argv[1] == "bf16", PREFETCH=sm.TILE_STREAM_PREFETCH, LINE=True,
                      POLL_SLEEP=sm.POLL_SLEEP_NS, WAIT_PREFETCH=wait_prefetch,
                      VECTOR_EDGES=sm.TILE_STREAM_VECTOR_EDGES, WRITE_PAIRS=sm.TILE_WRITE_PAIRS)
    kernel = triton.compile(ASTSource(fn=sm._tile_stream_fwd_kernel, signature=signature, constexprs=constexprs),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": 32, "maxnreg": 64})
    ptx = kernel.asm["ptx"]
    print(ptx.count("prefetch.global.L2::evict_last"), ptx.count("nanosleep.u32"), len(kernel.asm["cubin"]))
"""


def compiled_for_hopper(script: str, *args: str) -> str:
    """stdout of script (one that compiles kernels for sm_90 through ptxas) run outside the interpreter."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_tile_stream_prefetch_compiles_for_hopper(dtype):
    """tile-stream's prefetches and poll-sleep PTX go through ptxas for sm_90 (GPU paths the interpreter skips)."""
    assert sm.TILE_STREAM_PREFETCH > 0 and sm._l2_prefetch_steps(torch.ones(1)) == 0  # off for CPU tensors
    assert sm.POLL_SLEEP_NS > 0 and sm._poll_sleep_ns(torch.ones(1), sm.POLL_SLEEP_MIN_SEGMENTS) == 0
    elem_bytes = 4 if dtype == "fp32" else 2
    assert sm.TILE_STREAM_WAIT_PREFETCH[elem_bytes] > 0 and sm._wait_prefetch_blocks(torch.ones(1), 16) == 0
    assert sm._segments_block(8, 32, one_warp=True) == 1024 and sm._segments_block(8, 32) == 16
    assert sm._segments_block(8, 32, lanes=32) == 32 and sm._segments_block(64, 32, lanes=32) == 64
    assert sm._segments_block(1, 32, lanes=32) == 1
    lines = compiled_for_hopper(HOPPER_COMPILE, dtype).split("\n")
    (loop_prefetches, _, _), (prefetches, sleeps, cubin_bytes) = (map(int, line.split()) for line in lines[-3:-1])
    # the wait's prefetch: one address per 16-byte vector of a tile, 2 a thread at 32 warps
    assert loop_prefetches >= 1 and prefetches == loop_prefetches + 2 * sm.TILE_STREAM_WAIT_PREFETCH[elem_bytes]
    assert sleeps >= 1 and cubin_bytes > 0


VECTOR_EDGES_COMPILE = """
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels.triton_softmax as sm
signature = {"output_ptr": "*fp16", "input_ptr": "*fp16", "slots_ptr": "*i64", "input_row_stride": "i32",
             "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "n_segments": "i32",
             "blocks_per_segment": "i32", "max_polls": "i32", "TILE_ROWS": "constexpr", "SEGMENTS_BLOCK": "constexpr",
             "ALIGN": "constexpr", "VEC": "constexpr", "UNROLL": "constexpr", "LOG2": "constexpr", "GUARD": "constexpr",
             "PREFETCH": "constexpr", "LINE": "constexpr", "POLL_SLEEP": "constexpr", "WAIT_PREFETCH": "constexpr",
             "VECTOR_EDGES": "constexpr", "WRITE_PAIRS": "constexpr"}
aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}  # as the launch's 16-byte bases
for vector_edges in (False, True):
    constexprs = dict(TILE_ROWS=2048, SEGMENTS_BLOCK=16, ALIGN=1, VEC=8, UNROLL=1, LOG2=True, GUARD=False,
                      PREFETCH=0, LINE=True, POLL_SLEEP=0, WAIT_PREFETCH=0, VECTOR_EDGES=vector_edges,
                      WRITE_PAIRS=sm.TILE_WRITE_PAIRS)
    kernel = triton.compile(ASTSource(fn=sm._tile_stream_fwd_kernel, signature=signature, constexprs=constexprs,
                                      attrs=aligned), target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": 32, "maxnreg": 64})
    ptx = kernel.asm["ptx"]
    print(len(re.findall(r"(?:ld|st)[.]global[.a-z0-9:_]*[.]b16 ", ptx)), len(re.findall(r"[.]v4[.]b32 ", ptx)))
"""


def test_vector_edges_keep_edge_tiles_whole_on_hopper():
    """Rows that are not whole vectors (ALIGN 1): with TILE_STREAM_VECTOR_EDGES the edge tiles' loads and stores
    compile to 16-byte vector accesses, where per-element masks split each into 8 two-byte ones (sm_90 PTX)."""
    assert sm.TILE_STREAM_VECTOR_EDGES
    lines = compiled_for_hopper(VECTOR_EDGES_COMPILE).split("\n")
    (split_scalar, split_vector), (whole_scalar, whole_vector) = (map(int, line.split()) for line in lines[-3:-1])
    assert whole_scalar * 2 < split_scalar and whole_vector > split_vector


ROW_TILES_COMPILE = """
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels.triton_softmax as sm
aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}  # as the launch's 16-byte bases
for dtype, align, tile, warps, vector_edges in (("fp16", 8, 4096, 8, False), ("fp16", 1, 2048, 8, False),
                                               ("fp32", 4, 4096, 16, False), ("fp16", 1, 2048, 8, True)):
    signature = {"output_ptr": "*" + dtype, "input_ptr": "*" + dtype, "input_row_stride": "i32",
                 "output_row_stride": "i32", "n_cols": "i32", "N_TILES": "constexpr", "TILE": "constexpr",
                 "ALIGN": "constexpr", "LOAD_EVICT": "constexpr", "LOG2": "constexpr", "GUARD": "constexpr",
                 "KEEP_INPUT": "constexpr", "PTX": "constexpr", "VEC": "constexpr", "VECTOR_EDGES": "constexpr"}
    constexprs = dict(N_TILES=5 if vector_edges else 3, TILE=tile, ALIGN=align, LOAD_EVICT="evict_last",
                      LOG2=dtype == "fp16", GUARD=False, KEEP_INPUT=False, PTX=True, VEC=8 if vector_edges else 1,
                      VECTOR_EDGES=vector_edges)
    kernel = triton.compile(ASTSource(fn=sm._row_tiles_fwd_kernel, signature=signature, constexprs=constexprs,
                                      attrs=aligned), target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    ptx = kernel.asm["ptx"]
    print(tile // (32 * warps), len(re.findall(r"ld[.]global[.a-zA-Z0-9:_]*[.]v4[.]b32 ", ptx)),
          len(re.findall(r"st[.]global[.a-zA-Z0-9:_]*[.]v4[.]b32 ", ptx)), ptx.count("ex2.approx"),
          len(re.findall(r"ld[.]global[.a-zA-Z0-9:_]*[.]b16 ", ptx)))
"""


WRITE_PAIRS_COMPILE = """
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels.triton_softmax as sm
aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
signature = {"output_ptr": "*fp16", "input_ptr": "*fp16", "input_row_stride": "i32", "output_row_stride": "i32",
             "n_rows": "i32", "n_cols": "i32", "TILE_ROWS": "constexpr", "VEC": "constexpr", "ALIGN": "constexpr",
             "UNROLL": "constexpr", "LOG2": "constexpr", "GUARD": "constexpr", "VECTOR_EDGES": "constexpr",
             "EDGES_APART": "constexpr", "EDGE_BATCH": "constexpr", "WRITE_PAIRS": "constexpr"}
for pairs in (False, True):
    constexprs = dict(TILE_ROWS=2048, VEC=8, ALIGN=8, UNROLL=2, LOG2=True, GUARD=False, VECTOR_EDGES=False,
                      EDGES_APART=False, EDGE_BATCH=False, WRITE_PAIRS=pairs)
    kernel = triton.compile(ASTSource(fn=sm._tile_online_fwd_kernel, signature=signature, constexprs=constexprs,
                                      attrs=aligned), target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": 32, "maxnreg": 64})
    # the write's loads (evict_first: the re-reads from L2) as "l", its stores as "s", the first pass's loads apart
    accesses = re.findall(r"(ld[.]global[.a-zA-Z0-9:_]*evict_first|st[.]global)[.a-zA-Z0-9:_]*[.]v4[.]b32 ",
                          kernel.asm["ptx"])
    runs = [len(run) for run in re.findall(r"l+(?=s)", "".join(kind[0] for kind in accesses))]
    print(max(runs))
"""


@pytest.mark.parametrize("n_cols, forward_pairs, backward_pairs", [
    (65536, False, False),   # 128 KB of fp16: the 2-byte 64K rows lost 0.6-2.7% with pairs (round 60)
    (65544, True, True),     # whole vectors, over 128 KB
    (65537, True, False),    # not whole vectors: the backward's one-warp build spilled with pairs
])
def test_writes_pair_on_rows_over_128_kb_and_the_backward_only_on_whole_vectors(monkeypatch, n_cols, forward_pairs,
                                                                                backward_pairs):
    """The launches ask for WRITE_PAIRS where round 60 measured it to win: rows of more than 128 KB, and for the
    backward only rows of whole 16-byte vectors."""
    launched = []
    monkeypatch.setattr(sm, "_launch", lambda kernel, grid, *args, **kwargs: launched.append(kwargs["WRITE_PAIRS"]))
    x = make_input((2, n_cols), torch.float16)
    y = torch.empty_like(x)
    align = sm._forward_align(y, x)
    sm._forward_tile_online(y, x, 2, 32, 1, align, unroll=2, vector_edges=True)
    sm._forward_tile_stream(y, x, 2, 32, 1, 262144, align)
    sm._backward_stream(torch.empty_like(x), x, y, 16384, 32, 1, 1, 262144, align)
    assert launched == [forward_pairs, forward_pairs, backward_pairs]


def test_write_pairs_issue_two_tiles_of_loads_before_a_store_on_hopper():
    """Compiled for sm_90, the tile kernel's write (2 vectors a thread a tile, 32 warps) issues one tile's loads
    before each store, where a store may alias the next load; with WRITE_PAIRS two tiles' (round 59)."""
    single, paired = map(int, compiled_for_hopper(WRITE_PAIRS_COMPILE).split())
    assert (single, paired) == (2, 4)


def test_row_tiles_take_one_exp_an_element_on_hopper():
    """Compiled for sm_90, a row-tiles program of 3 tiles takes one ex2 per element a thread holds (the rows kernel's
    count, where the tile kernels take two), and moves whole rows in 16-byte vectors (2 a thread a tile of 4,096
    2-byte lanes on 8 warps, 1 of 4,096 fp32 lanes on 16), none where the row is not whole vectors (ALIGN 1), unless
    it is read from its first aligned element (VECTOR_EDGES, 5 tiles): then every tile in 16-byte vectors, once (no
    run-time branch), and only the two straddling vectors element by element."""
    lines = compiled_for_hopper(ROW_TILES_COMPILE).split("\n")[-5:-1]
    (per_thread, loads, stores, exps, _), (odd_per_thread, odd_loads, odd_stores, odd_exps, _), fp32, edges = (
        [int(v) for v in line.split()] for line in lines)
    assert exps == 3 * per_thread and loads == stores == 3 * per_thread // 8
    assert odd_exps == 3 * odd_per_thread and odd_loads == odd_stores == 0
    assert fp32[3] == 3 * fp32[0] and fp32[1] == fp32[2] == 3 * fp32[0] // 4
    edge_per_thread, edge_loads, edge_stores, edge_exps, edge_scalar_loads = edges
    assert edge_loads == edge_stores == 5 * edge_per_thread // 8 and edge_scalar_loads == 2
    assert edge_exps == 5 * edge_per_thread + 2


ROWS_BACKWARD_COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels.triton_softmax as sm
signature = {"grad_input_ptr": "*fp16", "output_ptr": "*fp16", "grad_output_ptr": "*fp16", "grad_input_row_stride": "i32",
             "output_row_stride": "i32", "grad_output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32",
             "ROWS_PER_PROGRAM": "constexpr", "BLOCK_SIZE": "constexpr", "ALIGN": "constexpr", "PTX": "constexpr"}
for ptx in (False, True):
    constexprs = dict(ROWS_PER_PROGRAM=1, BLOCK_SIZE=4096, ALIGN=8, PTX=ptx)
    kernel = triton.compile(ASTSource(fn=sm._rows_bwd_kernel, signature=signature, constexprs=constexprs),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    print(kernel.asm["ptx"].count("cvt.f32.f16"), len(kernel.asm["cubin"]))
"""


def test_backward_rows_widen_float16_twice_on_hopper():
    """The float16 backward rows kernel widens y and dy a second time by inline PTX (_widen_kept), which
    the interpreter cannot run: compiled for sm_90 through ptxas, it holds more widenings than with one
    merged widening (PTX False), so the compiler did not merge them."""
    assert not sm._inline_ptx(torch.ones(1))  # off for CPU tensors
    stdout = compiled_for_hopper(ROWS_BACKWARD_COMPILE)
    (merged, merged_cubin), (twice, twice_cubin) = [map(int, line.split()) for line in stdout.split("\n")[-3:-1]]
    assert twice > merged > 0 and merged_cubin > 0 and twice_cubin > 0


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy, by design
@pytest.mark.parametrize("plan,n_rows,n_cols,dtype", plan_cases("forward", torch.bfloat16))
def test_bfloat16_rows_beyond_the_scaled_range_come_out_exact(plan, n_rows, n_cols, dtype):
    """bfloat16 takes the log2 domain too, but past |max| = 2.4e38 max * log2(e) overflows; such rows
    (at the top of the range, at the bottom, and a row of -inf) must come out as exp(x - max) gives
    them, by the guard's second reading (kernels: LOG2E), and ordinary rows beside them untouched."""
    generator = torch.Generator().manual_seed(n_cols)
    k = torch.randint(0, 128, (n_rows, n_cols), generator=generator).to(torch.float64)
    x = torch.randint(-12, 1, (n_rows, n_cols), generator=generator).to(torch.float64) + 200.0
    x[0::4] = 2.0**127 * (1 + k[0::4] / 128)  # up to 3.39e38: the scaled max overflows to +inf
    x[1::4] = -(2.0**127) * (1.5 + k[1::4] / 256)  # all below -2.5e38: the scaled max overflows to -inf
    x[2::4, ::2] = -(2.0**127) * 1.9  # beyond the range, among ordinary values: they weigh 0
    if n_rows > 3:
        x[3] = float("-inf")  # a masked row: NaN, as torch gives
    x = x.to(dtype).to(DEVICE)
    assert sm._log2_exp(x) and sm._log2_guard(x, True)
    assert_softmax(sm.softmax_forward(x), x)


@pytest.mark.parametrize("plan,n_rows,n_cols,dtype", [case for dtype in DTYPES for case in plan_cases("backward", dtype)])
def test_backward_plan_boundaries(plan, n_rows, n_cols, dtype, poisoned_outputs):
    assert sm._select_plan("backward", n_rows, n_cols, dtype.itemsize, DEVICE, contiguous_align(n_cols, dtype)) == plan
    x = make_input((n_rows, n_cols), dtype)
    y = torch.softmax(x.float(), -1).to(dtype)
    dy = make_input((n_rows, n_cols), dtype, seed=1)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    assert_grad(sm.softmax_backward(y, dy), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [
    (1, 1),      # one element: output exactly 1
    (4, 7),      # odd N below a 16-byte vector: ALIGN 1, 64-row tile mostly masked
    (3, 1000),   # N % 8 == 0 but not % 16: ALIGN 8 (fp16) / 4 (fp32), tile of 4 rows x 1024
    (3, 1001),   # odd N near the 1024 block edge: ALIGN 1
    (130, 100),  # 128-column tiles of 32 rows, 5 programs, last one mostly past the end
    (2, 4095),   # one below a power of two: one row per program, 8 warps
])
def test_forward_odd_shapes(shape, dtype, poisoned_outputs):
    x = make_input(shape, dtype)
    assert_softmax(sm.softmax_forward(x), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [
    (1, 262_144),   # exchange: 32-64 chunks of one row, all aligned, more items than programs
    (3, 100_003),   # exchange, odd N: rows 1, 2 start mid-vector, so masked head and tail chunks
    (5, 32_776),    # exchange, N % 8 == 0 but not % 16: a head of 0 or 4 elements, ALIGN 8 / 4
], ids=lambda shape: f"{shape[0]}x{shape[1]}")
def test_forward_long_rows(shape, dtype, poisoned_outputs):
    x = make_input(shape, dtype)
    assert_softmax(sm.exchange_forward(x), x)
    assert_softmax(sm.softmax_forward(x), x)  # whatever path the table picks for the shape


def exchange_views(dtype):
    """Long-row inputs whose layout differs from the contiguous output (exchange's VEC = 1 path)."""
    base = make_input((6, 40_008), dtype)
    flat = base.reshape(-1)
    return {
        "row_slice": base[::2],                         # row stride 80016
        "col_slice": base[:, 3:-5],                     # row stride 40008, unaligned start
        "unaligned_base": flat[3:3 + 3 * 40_001].view(3, 40_001),  # output's strides, base off by 3
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["row_slice", "col_slice", "unaligned_base"])
def test_exchange_strided(view, dtype, poisoned_outputs):
    x = exchange_views(dtype)[view]
    assert sm._exchange_vec(x.element_size(), x, torch.empty(x.shape, dtype=dtype)) == 1
    assert_softmax(sm.exchange_forward(x), x)
    y = torch.softmax(x.double(), -1).to(dtype)
    dy = exchange_views(dtype)[view] / 10
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    assert_grad(sm.exchange_backward(y, dy), expected, dtype)


def test_exchange_grid_is_co_resident():
    for num_warps, programs_per_sm in [(8, 4), (8, 3), (8, 2), (16, 8), (32, 1)]:
        n_programs, maxnreg = sm._exchange_grid(10**6, 64, num_warps, programs_per_sm, DEVICE)
        resident = n_programs // sm._sm_count(DEVICE)
        assert resident * num_warps <= 64                    # warps per SM
        assert resident * num_warps * 32 * maxnreg <= 65536  # registers per SM
        assert maxnreg % 8 == 0 and maxnreg <= 255
    assert sm._exchange_grid(3, 3, 8, 4, DEVICE)[0] == 3  # never more programs than work items


def stream_views(dtype):
    """Inputs for the stream kernels with tiny blocks, so rows span many blocks and segments."""
    base = make_input((5, 305), dtype)
    base[1, ::3] = float("-inf")  # masked entries: exactly 0
    base[2] = float("-inf")       # a fully masked row: NaN, as torch
    flat = base.reshape(-1)
    return {
        "contiguous": base[:, :299].contiguous(),  # odd N: rows start mid-vector, masked edge blocks
        "col_slice": base[:, 3:-2],                # row stride 305 != the output's: VEC = 1
        "unaligned_base": flat[3:3 + 4 * 299].view(4, 299),
    }


# (block_size, programs_per_sm, segment blocks, one_warp_from, slot_lanes): several segments exchanging partials
# with more programs than segments; one block per segment (edge blocks alone); whole rows (no exchange);
# the first again with a slot vector of a lane per thread (Plan.one_warp_from), and of 32 lanes (Plan.slot_lanes)
STREAM_CONFIGS = [(16, 2, 2, 0, 16), (32, 3, 1, 0, 16), (64, 1, math.inf, 0, 16), (16, 2, 2, 2, 16), (16, 2, 2, 0, 32)]
# tile-stream (programs_per_sm, segment tiles, unroll, one_warp_from, vector_edges), tiles of 32 vectors (one
# warp, one vector a thread): the same four cases, loops unrolled or not, each with edge tiles in whole vectors
# or element by element (TILE_STREAM_VECTOR_EDGES)
TILE_STREAM_CONFIGS = [(2, 2, 1, 0, True), (3, 1, 2, 0, False), (1, math.inf, 2, 0, True), (2, 2, 1, 2, False),
                       (2, 2, 1, 0, False), (3, 1, 2, 0, True), (1, math.inf, 2, 0, False)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["contiguous", "col_slice", "unaligned_base"])
@pytest.mark.parametrize("programs_per_sm,segment_tiles,unroll,one_warp_from,vector_edges", TILE_STREAM_CONFIGS)
def test_tile_stream_kernel(view, programs_per_sm, segment_tiles, unroll, one_warp_from, vector_edges, dtype):
    x = stream_views(dtype)[view]
    y = torch.full(x.shape, 1234.5, dtype=dtype, device=DEVICE)
    align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
    tile_bytes = 32 * sm._exchange_vec(x.element_size(), x, y) * x.element_size()
    sm._forward_tile_stream(y, x, 1, 1, programs_per_sm, segment_tiles * tile_bytes, align, unroll,
                            one_warp_from=one_warp_from, vector_edges=vector_edges)
    assert_softmax(y, x)


def test_vector_edges_only_for_rows_not_of_whole_vectors(monkeypatch):
    """Edge tiles in whole vectors where ALIGN < VEC; rows of whole vectors keep the kernel without them (round 41:
    the extra code cost aligned fp32 rows 4-13%)."""
    launched = []
    monkeypatch.setattr(sm, "_launch", lambda kernel, grid, *args, **kwargs: launched.append(kwargs["VECTOR_EDGES"]))
    for n_cols in (4096, 4099):
        x = make_input((2, n_cols), torch.float16)
        y = torch.empty_like(x)
        sm._forward_tile_stream(y, x, 1, 1, 1, 1024, sm._forward_align(y, x))
    assert sm.TILE_STREAM_VECTOR_EDGES and launched == [False, True]
    assert not sm._vector_edges(8, 8, True) and sm._vector_edges(2, 8) and not sm._vector_edges(1, 1, True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n_cols", [1, 3, 9, 299])
@pytest.mark.parametrize("vector_edges", [True, False])
def test_tile_stream_writes_its_rows_and_nothing_else(n_cols, vector_edges, dtype):
    """Rows inside wider buffers (row stride n_cols + 13: rows start at every offset of a vector; rows shorter
    than a vector, inside one tile, and of two tiles): every element of every row written, and nothing beside
    the rows, with edge tiles in whole vectors (whole-vector stores plus the straddling vectors) or not."""
    big_x = make_input((6, n_cols + 13), dtype)
    big_x[1, ::2] = float("-inf")
    big_y = torch.full_like(big_x, 1234.5)
    x, y = big_x[:, 8:8 + n_cols], big_y[:, 8:8 + n_cols]  # 16-byte-aligned bases, one shared row stride
    align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
    vec = sm._exchange_vec(x.element_size(), x, y)
    assert vec == 16 // x.element_size() and align < vec
    sm._forward_tile_stream(y, x, 1, 1, 2, 2 * 32 * vec * x.element_size(), align, 1, vector_edges=vector_edges)
    assert_softmax(y, x)
    beside = torch.ones_like(big_y, dtype=torch.bool)
    beside[:, 8:8 + n_cols] = False
    assert (big_y[beside] == 1234.5).all()


# row-tiles (tile lanes, warps): a tile of 64 lanes over 299-305 columns is 5 tiles, the last one padded; 128 lanes
# 3 tiles; 512 lanes one tile, padded as the rows kernel pads. Under the interpreter warps only shape the layout.
ROW_TILES_CONFIGS = [(64, 1), (128, 2), (512, 4)]


def edge_test_input(view, dtype):
    """(x, y, outside) for the kernels that read odd rows in whole vectors: x one of stream_views' views, or its
    contiguous rows cut to 296 columns (37 whole vectors), to 250 (odd, shorter) or to 3 (inside one vector, or across
    two); y its output, sitting in a buffer poisoned with 1234.5 whose parts outside y (views of it, in a list) must
    keep it. For contiguous views y shares x's odd row stride and base alignment, so odd rows can start at their first
    16-byte-aligned element; the other views cannot (col_slice: strides differ; unaligned_base: bases) or need not
    (whole_vectors)."""
    views = stream_views(dtype)
    cut = {"whole_vectors": 296, "short_odd": 250, "tiny_odd": 3}
    x = views["contiguous"][:, :cut[view]].contiguous() if view in cut else views[view]
    if view in ("contiguous", "short_odd", "tiny_odd", "unaligned_base"):
        lead = 3 if view == "unaligned_base" else 16 // x.element_size()
        buffer = torch.full((x.numel() + lead + 16,), 1234.5, dtype=dtype, device=DEVICE)
        y = buffer[lead:lead + x.numel()].view(x.shape)
        outside = [buffer[:lead], buffer[lead + x.numel():]]
    else:
        buffer = torch.full((x.shape[0], x.shape[1] + 16), 1234.5, dtype=dtype, device=DEVICE)
        y = buffer[:, :x.shape[1]]
        outside = [buffer[:, x.shape[1]:]]
    return x, y, outside


def untouched(outside) -> bool:
    """Whether every part of an edge_test_input buffer outside its output still holds the poison."""
    return all(bool((part == 1234.5).all()) for part in outside)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["contiguous", "short_odd", "tiny_odd", "col_slice", "unaligned_base",
                                  "whole_vectors"])
@pytest.mark.parametrize("tile,num_warps", ROW_TILES_CONFIGS)
@pytest.mark.parametrize("keep_input", [False, True], ids=["float32_tiles", "kept_input"])
@pytest.mark.parametrize("vector_edges", [False, True], ids=["element_edges", "vector_edges"])
def test_row_tiles_kernel(vector_edges, keep_input, view, tile, num_warps, dtype):
    """Every element of each row written, and nothing outside the rows (see edge_test_input). With vector_edges
    the contiguous odd rows are read from their first 16-byte-aligned element, on one more vector's lanes: the
    first tile and the last hang over the row's ends, and at 250 columns on tiles of 64 lanes (fp16: 5 tiles for
    257 lanes) the one before the last too, in rows that start on a vector, while the last is then wholly outside."""
    x, y, outside = edge_test_input(view, dtype)
    align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
    sm._forward_row_tiles(y, x, tile, num_warps, align, sm._log2_exp(x), keep_input=keep_input,
                          vector_edges=vector_edges)
    assert_softmax(y, x)
    assert untouched(outside)


def test_row_tiles_take_whole_rows_in_equal_tiles(monkeypatch):
    """cdiv(n_cols, tile) tiles a row: 8,200 columns are 3 tiles of 4,096 (12,288 lanes), where the rows kernel
    would pad them to 16,384."""
    launched = []
    monkeypatch.setattr(sm, "_launch", lambda kernel, grid, *args, **kwargs: launched.append((grid, kwargs)))
    x = make_input((3, 8200), torch.float16)
    sm._forward_row_tiles(torch.empty_like(x), x, 4096, 8, 8, True)
    (grid, kwargs), = launched
    assert grid == (3,) and kwargs["N_TILES"] == 3 and kwargs["TILE"] == 4096 and kwargs["num_warps"] == 8


def test_few_rows_get_smaller_segments():
    assert sm._few_rows_segment(262144, 128, 2 << 20, 132) == 262144  # 128 rows of 2 MB: as planned
    assert sm._few_rows_segment(262144, 4, 2 << 20, 132) == (2 << 20) // 33  # 4 rows: 33 segments each
    assert sm._few_rows_segment(262144, 1000, 300, 132) == 300  # short rows: never more than a row
    assert sm._few_rows_segment(262144, 1, 10, 132) == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["contiguous", "col_slice", "unaligned_base"])
@pytest.mark.parametrize("block_size,programs_per_sm,segment_blocks,one_warp_from,slot_lanes", STREAM_CONFIGS)
def test_stream_backward_kernel(view, block_size, programs_per_sm, segment_blocks, one_warp_from, slot_lanes, dtype):
    x = stream_views(dtype)[view]
    y_in = torch.softmax(x.double(), -1).nan_to_num(0.0).to(dtype)
    dy = make_input(x.shape, dtype, seed=1)
    dx = torch.full(x.shape, 1234.5, dtype=dtype, device=DEVICE)
    align = sm._vector_align(x.element_size(), x.shape[1], dx.stride(0), y_in.stride(0), dy.stride(0))
    sm._backward_stream(dx, y_in, dy, block_size, 4, programs_per_sm, 2,
                        segment_blocks * block_size * 2 * x.element_size(), align,
                        one_warp_from=one_warp_from, slot_lanes=slot_lanes, maxnreg=64 if slot_lanes > 16 else 0)
    expected = y_in.double() * (dy.double() - (y_in.double() * dy.double()).sum(-1, keepdim=True))
    assert_grad(dx, expected, dtype)


def test_probe_variants_set_the_knobs_they_name():
    """scripts/probe_ab.py knobs builds each variant by rewriting the module's knob lines: every knob is there once
    and each variant gets the values it names (a renamed knob would otherwise leave a variant timing the default)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    probe_ab = importlib.import_module("probe_ab")
    for i, (label, on) in enumerate({**probe_ab.FORWARD_VARIANTS, **probe_ab.BACKWARD_VARIANTS}.items()):
        module = probe_ab.with_knobs(f"triton_softmax_test_knobs_{i}", on)
        assert {knob: getattr(module, knob) for knob in probe_ab.KNOBS} == {knob: knob in on for knob in probe_ab.KNOBS}
        assert set(on) <= set(probe_ab.KNOBS), label
    for i, (label, on) in enumerate(probe_ab.SPLIT_VARIANTS.items()):
        module = probe_ab.with_knobs(f"triton_softmax_test_split_{i}", on)
        assert {knob: getattr(module, knob) for knob in probe_ab.KNOBS} == {knob: knob in on for knob in probe_ab.KNOBS}
    everywhere = probe_ab.with_knobs("triton_softmax_test_everywhere", probe_ab.PAIRS, (probe_ab.EVERYWHERE,))
    assert everywhere.WRITE_PAIRS_ABOVE_ROW_BYTES == 0 and everywhere._write_pairs(True, 65536, 2)
    assert not sm._write_pairs(True, 65536, 2) and sm._write_pairs(True, 65537, 2) and sm._write_pairs(True, 65536, 4)
    assert not sm._write_pairs(False, 1 << 20, 4)
    unrolled = probe_ab.with_knobs("triton_softmax_test_unrolled", (), (probe_ab.UNROLLED_TWICE,))
    # the H100's rows (rounds 57-60 ran on H100s); the rows for a 60 MB L2 keep their own
    assert [plan.unroll for plan in unrolled.SOFTMAX_PLANS if plan.path == "tile-stream" and not plan.min_l2_bytes] \
        == [2, 1]
    assert [plan.unroll for plan in unrolled.SOFTMAX_PLANS if plan.path == "tile-stream" and plan.min_l2_bytes] \
        == [1, 1]


def test_probe_plan_rewrites_reach_the_rows_they_name():
    """scripts/probe_ab.py two_byte_stream, tile_unroll and segments rewrite lines of SOFTMAX_PLANS: each line is there
    once (rewritten asserts it), and the rewritten table sends rows where the variant says."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    probe_ab = importlib.import_module("probe_ab")
    many = 10**6  # rows: at least 2 an SM on any GPU
    stream = probe_ab.rewritten("triton_softmax_test_stream", [probe_ab.two_byte_stream_plan(131071, 131072)])
    assert stream._select_plan("forward", many, 100000, 2, DEVICE, 8).path == "tile-stream"
    assert stream._select_plan("forward", many, 131072, 2, DEVICE, 8).path == "tile"
    both = probe_ab.rewritten("triton_softmax_test_unroll", probe_ab.UNROLL_VARIANTS["both unrolled 4x"])
    assert [both._select_plan("forward", many, n, 2, DEVICE, align).unroll for n, align in ((100000, 8), (100001, 1))] \
        == [4, 4]
    assert [sm._select_plan("forward", many, n, 2, DEVICE, align).unroll for n, align in ((100000, 8), (100001, 1))] \
        == [2, 2]
    # segments: every forward tile-stream row for any L2 (round 72's, the H100's), and no other row, at the variant's
    # size
    sized = probe_ab.rewritten("triton_softmax_test_segments", probe_ab.stream_segments_rewrites(163840))
    for plan, before in zip(sized.SOFTMAX_PLANS, sm.SOFTMAX_PLANS, strict=True):
        assert plan.segment_bytes == (163840 if plan.op == "forward" and plan.path == "tile-stream"
                                      and not plan.min_l2_bytes else before.segment_bytes)
    large_l2 = sized._l2_bytes(DEVICE) >= sized.L2_60_MB  # an H200 takes its own rows, which keep 256 KB
    assert sized._select_plan("forward", many, 1 << 20, 4, DEVICE, 4).segment_bytes == (262144 if large_l2 else 163840)


def test_even_segments(monkeypatch):
    monkeypatch.setattr(sm, "EVEN_SEGMENTS", False)
    assert sm._stream_segments(13 * 16, 2, 16, 8 * 16 * 2, 16 // 2, 8) == (2, 8)
    monkeypatch.setattr(sm, "EVEN_SEGMENTS", True)
    # 13 blocks of at most 8: 7 + 6, not 8 + 5
    assert sm._stream_segments(13 * 16, 2, 16, 8 * 16 * 2, 16 // 2, 8) == (2, 7)
    assert sm._stream_segments(16 * 16, 2, 16, 8 * 16 * 2, 16 // 2, 8) == (2, 8)


def test_wait_prefetch_by_element_size(monkeypatch):
    """tile-stream prefetches two tiles of its next item while it waits for 2-byte rows and one for fp32 (round 73),
    only where a row has several segments and inline PTX runs, or the tiles a caller gives."""
    monkeypatch.setattr(sm, "_inline_ptx", lambda x: True)
    assert [sm._wait_prefetch_blocks(torch.ones(1, dtype=dtype), 3) for dtype in DTYPES] == [1, 2, 2]
    assert sm._wait_prefetch_blocks(torch.ones(1, dtype=torch.float16), 1) == 0
    assert sm._wait_prefetch_blocks(torch.ones(1, dtype=torch.float16), 3, blocks=4) == 4
    monkeypatch.setattr(sm, "_inline_ptx", lambda x: False)
    assert sm._wait_prefetch_blocks(torch.ones(1, dtype=torch.float16), 3) == 0


def test_grid_fill():
    # 128 rows of 64 blocks on 132 programs: 10 segments of 7 (the last of 1) run on 130 programs, 13 rows a round,
    # 10 rounds of 7 blocks; 11 segments of 6 on all 132, 12 rows a round, 11 rounds of 6 blocks
    assert sm._grid_fill(128, 64, 10, 7, 132) == pytest.approx(128 * 64 / (10 * 7 * 132))
    assert sm._grid_fill(128, 64, 11, 6, 132) == pytest.approx(128 * 64 / (11 * 6 * 132))
    # even segments and rows that fill every round: the whole grid
    assert sm._grid_fill(132, 8, 1, 8, 132) == 1.0
    # fewer rows than a round: one round, the rest of the grid idle
    assert sm._grid_fill(3, 4, 2, 2, 132) == pytest.approx(3 * 4 / (1 * 2 * 132))


@pytest.mark.parametrize("n_rows,n_cols,dtype,segments", [
    (128, 1 << 20, torch.float16, (11, 6)),   # 224 KB: 10 x 7, the last of 1 tile, on 130 programs -> 192 KB
    (256, 1 << 19, torch.float16, (5, 7)),    # 192 KB would fill less (6 x 6, the last of 2): 224 KB stays
    (256, 1 << 19, torch.float32, (11, 6)),   # 224 KB: 10 x 7, the last of 1 -> 192 KB
    (204, 655_360, torch.float32, (12, 7)),   # 224 KB: 12 x 7 on all 132; 192 KB, 14 x 6 on 126, fills less
    (1_024, 1 << 17, torch.float32, (3, 6)),  # both sizes cut 16 tiles as 6 + 6 + 4
])
def test_tile_stream_takes_the_cut_that_fills_the_grid(n_rows, n_cols, dtype, segments, monkeypatch):
    """The table's tile-stream rows carry a shorter segment (192 KB) that the launch takes where _grid_fill gives it
    SHORTER_SEGMENT_GAIN more than the plan's 224 KB, on 132 SMs and a 50 MB L2, the H100's (tiles of 2,048 vectors:
    32 KB)."""
    monkeypatch.setattr(sm, "_sm_count", lambda device: 132)
    monkeypatch.setattr(sm, "_l2_bytes", lambda device: 50 << 20)
    x = torch.empty((n_rows, n_cols), dtype=dtype, device="meta")
    y = torch.empty_like(x)
    align = sm._forward_align(y, x)
    plan = sm._select_plan("forward", n_rows, n_cols, x.element_size(), x.device, align)
    assert (plan.path, plan.segment_bytes, plan.shorter_segment_bytes) == ("tile-stream", 229376, 196608)
    layout = sm._tile_stream_layout(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                    plan.segment_bytes, align, plan.shorter_segment_bytes)
    assert layout[3:] == segments
    # without a shorter cut, or with the gain out of reach, the plan's own segments
    alone = sm._tile_stream_layout(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                   plan.segment_bytes, align)
    monkeypatch.setattr(sm, "SHORTER_SEGMENT_GAIN", math.inf)
    assert sm._tile_stream_layout(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                  plan.segment_bytes, align, plan.shorter_segment_bytes) == alone
    assert alone[3] == math.ceil(n_cols * x.element_size() / 229376)


@pytest.mark.parametrize("op,n_rows,n_cols,dtype,h100_segment,h200_segment", [
    ("forward", 512, 1 << 18, torch.float16, 229376, 262144),
    ("forward", 128, 1 << 20, torch.float32, 229376, 262144),
    ("forward", 1_342, 100_001, torch.float32, 229376, 262144),
    ("backward", 1_024, 1 << 17, torch.bfloat16, 196608, 262144),
    ("backward", 512, 1 << 18, torch.float32, 196608, 262144),
    ("backward", 128, 1 << 20, torch.float16, 262144, 262144),  # longer rows: 256 KB on both
])
def test_segments_follow_the_l2(op, n_rows, n_cols, dtype, h100_segment, h200_segment, monkeypatch):
    """GPUs with a 60 MB L2 (the H200) take 256 KB segments without a shorter cut; 50 MB (the H100) keeps the
    224/192 KB forward and 192 KB backward segments of rows to 262,144 columns; the path is the same on both."""
    monkeypatch.setattr(sm, "_sm_count", lambda device: 132)
    align = contiguous_align(n_cols, dtype)
    plans = {}
    for gpu, l2_bytes in (("h100", 50 << 20), ("h200", 60 << 20)):
        monkeypatch.setattr(sm, "_l2_bytes", lambda device, l2_bytes=l2_bytes: l2_bytes)
        plans[gpu] = sm._select_plan(op, n_rows, n_cols, dtype.itemsize, DEVICE, align)
    assert (plans["h100"].segment_bytes, plans["h200"].segment_bytes) == (h100_segment, h200_segment)
    assert plans["h200"].shorter_segment_bytes == 0
    assert plans["h100"].path == plans["h200"].path == ("tile-stream" if op == "forward" else "stream")
    assert plans["h100"]._replace(segment_bytes=0, shorter_segment_bytes=0, min_l2_bytes=0) == \
        plans["h200"]._replace(segment_bytes=0, shorter_segment_bytes=0, min_l2_bytes=0)


@pytest.mark.skipif(not INTERPRETING, reason="asks the interpreter's stand-in for an L2")
def test_interpreter_takes_the_rows_for_any_l2():
    """Off CUDA there is no L2 to ask: the table's rows without min_l2_bytes, the H100's."""
    assert sm._l2_bytes(DEVICE) == 0
    assert sm._select_plan("forward", 1, 1 << 20, 4, DEVICE, 4).min_l2_bytes == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n_cols", [1_024, 1_001, 1_109], ids=lambda n: f"{n}cols")
@pytest.mark.parametrize("segment_blocks", [math.inf, 5], ids=["one_segment", "segments"])
def test_stream_backward_write_pairs(segment_blocks, n_cols, dtype, monkeypatch):
    """STREAM_WRITE_PAIRS: the backward's second pass reads its blocks two at a time (blocks of 64 columns, so 16-19
    a row, even and odd inner counts), in one segment a row and in several; every element of dx written."""
    monkeypatch.setattr(sm, "STREAM_WRITE_PAIRS", True)
    monkeypatch.setattr(sm, "WRITE_PAIRS_ABOVE_ROW_BYTES", 0)  # these rows are far under the 128 KB the GPUs pair
    x = make_input((3, n_cols), dtype)
    y_in = torch.softmax(x.double(), -1).to(dtype)
    dy = make_input(x.shape, dtype, seed=1)
    dx = torch.full(x.shape, 1234.5, dtype=dtype, device=DEVICE)
    align = sm._vector_align(x.element_size(), n_cols, dx.stride(0), y_in.stride(0), dy.stride(0))
    sm._backward_stream(dx, y_in, dy, 64, 4, 2, 1, segment_blocks * 64 * 2 * x.element_size(), align)
    expected = y_in.double() * (dy.double() - (y_in.double() * dy.double()).sum(-1, keepdim=True))
    assert_grad(dx, expected, dtype)


@pytest.mark.skipif(not INTERPRETING, reason="the grid arithmetic with the interpreter's 1 SM and no compile")
def test_stream_segments_and_grid():
    # 299 columns, 16-byte vectors of 8: a row spans up to 306 elements = 20 blocks of 16
    assert sm._stream_segments(299, 2, 16, 2 * 16 * 2, 1, 8) == (10, 2)
    assert sm._stream_segments(299, 2, 16, math.inf, 1, 8) == (1, 20)
    # a row's segments run in one round: the grid is a multiple of n_segments, and >= 1 row
    assert sm._persistent_programs(None, (), {}, 10**6, 25, 8, DEVICE) % 25 == 0
    assert sm._persistent_programs(None, (), {}, 10**6, 25, 1, DEVICE) == 25
    assert sm._persistent_programs(None, (), {}, 3, 1, 8, DEVICE) == 3


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("vector_edges", [False, True], ids=["element_edges", "vector_edges"])
@pytest.mark.parametrize("view", ["contiguous", "short_odd", "tiny_odd", "col_slice", "unaligned_base",
                                  "whole_vectors"])
@pytest.mark.parametrize("edges_apart,edge_batch", [(False, False), (True, False), (True, True)],
                         ids=["edges_in_loop", "edges_apart", "edges_apart_batched"])
def test_tile_kernel(edges_apart, edge_batch, view, vector_edges, dtype, monkeypatch):
    """1 warp x 1 vector per step: 256 (fp16) or 128 (fp32) columns a step, 2-3 steps a row; every element of each
    row written, and nothing outside the rows (see edge_test_input). With vector_edges the odd rows
    whose tensors share a row stride and 16-byte-aligned bases (contiguous) start their steps at their first
    16-byte-aligned element; the others keep the per-element kernel (unaligned_base, col_slice) or take no edges
    (whole_vectors). With TILE_EDGE_BATCH the write reads its edges in one batch (rows of two steps or more)."""
    monkeypatch.setattr(sm, "TILE_EDGE_BATCH", edge_batch)
    x, y, outside = edge_test_input(view, dtype)
    align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
    sm._forward_tile_online(y, x, 1, 1, 2, align, vector_edges=vector_edges, edges_apart=edges_apart)
    assert_softmax(y, x)
    assert untouched(outside)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n_cols", [1_536, 1_501, 1_277], ids=lambda n: f"{n}cols")
@pytest.mark.parametrize("path", ["tile_loop", "tile_edges_apart", "tile_stream_one_segment", "tile_stream_segments"])
def test_write_pairs(path, n_cols, dtype, monkeypatch):
    """TILE_WRITE_PAIRS: the write reads its inner tiles two at a time (steps of one warp x one vector: 256 fp16 or
    128 fp32 columns, so 5-12 tiles a row, an even and an odd count of inner ones), every element written and
    nothing outside the rows; the tile kernel in its loop form and with its edges apart, tile-stream in one segment a
    row and in several."""
    monkeypatch.setattr(sm, "TILE_WRITE_PAIRS", True)
    monkeypatch.setattr(sm, "WRITE_PAIRS_ABOVE_ROW_BYTES", 0)  # these rows are far under the 128 KB the GPUs pair
    big_x = make_input((3, n_cols + 13), dtype)
    big_x[1, ::5] = float("-inf")
    big_y = torch.full_like(big_x, 1234.5)
    x, y = big_x[:, 8:8 + n_cols], big_y[:, 8:8 + n_cols]  # 16-byte-aligned bases, one shared row stride
    align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
    odd = align * x.element_size() < 16
    if path.startswith("tile_stream"):
        tile_bytes = 32 * sm._exchange_vec(x.element_size(), x, y) * x.element_size()
        segment_bytes = math.inf if path == "tile_stream_one_segment" else 5 * tile_bytes
        sm._forward_tile_stream(y, x, 1, 1, 2, segment_bytes, align, 2, vector_edges=True)
    else:
        sm._forward_tile_online(y, x, 1, 1, 2, align, unroll=4, vector_edges=odd,
                                edges_apart=path == "tile_edges_apart")
    assert_softmax(y, x)
    beside = torch.ones_like(big_y, dtype=torch.bool)
    beside[:, 8:8 + n_cols] = False
    assert (big_y[beside] == 1234.5).all()


def test_tile_kernel_takes_vector_edges_only_for_rows_that_are_not_whole_vectors(monkeypatch):
    """VECTOR_EDGES compiles only for odd rows whose tensors share a row stride and 16-byte-aligned bases: rows of
    whole vectors keep exactly the kernel of before (round 41's sweeps: the edge code slowed them by 1-13%)."""
    launched = []
    monkeypatch.setattr(sm, "_launch", lambda kernel, grid, *args, **kwargs: launched.append(kwargs["VECTOR_EDGES"]))
    views = stream_views(torch.float16)
    for x in (views["contiguous"], views["col_slice"], views["contiguous"][:, :296].contiguous()):
        y = torch.empty_like(x)
        sm._forward_tile_online(y, x, 1, 1, 2, sm._forward_align(y, x), vector_edges=True)
    assert launched == [True, False, False]


# ---------------------------------------------------------------------------------------------
# Named variants
# ---------------------------------------------------------------------------------------------

def test_kernel_variant_names():
    assert set(sm.KERNEL_VARIANTS) == {"softmax", "single_block", "single_block_cached", "online",
                                       "online_autotuned", "exchange"}


def variant_cases(names):
    """(name, shape) for each variant on the shapes within its limits: single_block* stop at 65536."""
    shapes = [(5, 7), (4, 1000), (3, 5000), (2, 65536), (2, 100_003)]  # online: 1, 1, 2, 16, 25 blocks
    return [pytest.param(name, shape, id=f"{name}-{shape[0]}x{shape[1]}") for name in names for shape in shapes
            if not name.startswith("single_block") or shape[1] <= sm.MAX_FUSED_SIZE]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,shape", variant_cases(sorted(sm.KERNEL_VARIANTS)))
def test_forward_variants(name, shape, dtype, poisoned_outputs):
    x = make_input(shape, dtype)
    assert_softmax(sm.KERNEL_VARIANTS[name](x), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,shape", variant_cases(sorted(sm.BACKWARD_VARIANTS)))
def test_backward_variants(name, shape, dtype, poisoned_outputs):
    x = make_input(shape, dtype)
    y = torch.softmax(x.float(), -1).to(dtype)
    dy = make_input(shape, dtype, seed=1)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    assert_grad(getattr(sm, name)(y, dy), expected, dtype)


def test_single_block_limit():
    x = make_input((1, sm.MAX_FUSED_SIZE + 1), torch.float16)
    for forward in (sm.single_block_forward, sm.single_block_cached_forward):
        with pytest.raises(ValueError, match="65536"):
            forward(x)
    with pytest.raises(ValueError, match="65536"):
        sm.single_block_backward(x, x)


def test_compile_facts():
    x = make_input((4, 1000), torch.float16)
    if INTERPRETING:
        assert sm.compile_facts("single_block", x) == []
        return
    keys = {"kernel", "n_regs", "n_spills", "shared_bytes", "num_warps", "num_stages", "block_size", "grid",
            "constexprs"}
    for name in list(sm.KERNEL_VARIANTS) + list(sm.BACKWARD_VARIANTS):
        facts = sm.compile_facts(name, x)
        assert facts and all(set(fact) == keys for fact in facts), name
        assert all(isinstance(fact["n_regs"], int) for fact in facts), name


def test_kernel_facts_name_each_kind_of_block():
    """The compile facts' block: BLOCK_SIZE where a kernel has one (the autotuner's pick if it chose it), a tile
    step's TILE_ROWS x VEC, a row-tiles row's N_TILES x TILE."""
    metadata = {"shared": 0, "num_warps": 8, "num_stages": 3}
    handle = types.SimpleNamespace(name="k", n_regs=40, n_spills=0, metadata=metadata)
    tuned = types.SimpleNamespace(best_config=types.SimpleNamespace(kwargs={"BLOCK_SIZE": 2048}))
    assert sm._kernel_facts(None, handle, {"BLOCK_SIZE": 1024})["block_size"] == 1024
    assert sm._kernel_facts(tuned, handle, {})["block_size"] == 2048
    assert sm._kernel_facts(None, handle, {"TILE_ROWS": 2048, "VEC": 8})["block_size"] == 16384
    assert sm._kernel_facts(None, handle, {"N_TILES": 3, "TILE": 4096})["block_size"] == 12288
    assert sm._kernel_facts(None, handle, {"ALIGN": 8})["block_size"] is None


def test_kernel_facts_record_the_grid_and_the_compile_time_values():
    """A launch's grid (its programs), where it was a tuple, and the upper-case integers and flags it was launched
    with; tensors, callables and lower-case options (num_warps) are not among them."""
    metadata = {"shared": 0, "num_warps": 4, "num_stages": 1}
    handle = types.SimpleNamespace(name="k", n_regs=80, n_spills=0, metadata=metadata)
    kwargs = {"TILE": 4096, "SLOTS": 4, "TILE_LOOP": True, "num_warps": 4, "maxnreg": 80, "LAYOUT": "x"}
    facts = sm._kernel_facts(None, handle, kwargs, (792,))
    assert facts["grid"] == [792]
    assert facts["constexprs"] == {"SLOTS": 4, "TILE": 4096, "TILE_LOOP": True}
    assert sm._kernel_facts(None, handle, {}, lambda meta: (1,))["grid"] is None


# ---------------------------------------------------------------------------------------------
# softmax(): torch.softmax semantics
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [
    ((6, 300), -1), ((6, 300), 0), ((6, 300), 1), ((6, 300), -2),
    ((3, 5, 70), 0), ((3, 5, 70), 1), ((3, 5, 70), -1), ((3, 5, 70), -3),
    ((2, 3, 4, 50), 1), ((2, 3, 4, 50), -1), ((2, 3, 4, 50), -4),
    ((37,), 0), ((37,), -1),
])
def test_any_dim(shape, dim, dtype):
    x = make_input(shape, dtype)
    assert_softmax(sm.softmax(x, dim), x, dim)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["transposed", "row_slice", "col_slice", "expanded", "permuted_3d"])
def test_non_contiguous(view, dtype):
    base = make_input((40, 96), dtype)
    x = {
        "transposed": base.t(),                              # column stride 96: copied
        "row_slice": base[::3],                              # row stride 288, no copy
        "col_slice": base[:, 3:-5],                          # unaligned start, row stride 96
        "expanded": base[:1].expand(5, 96),                  # row stride 0
        "permuted_3d": base.reshape(4, 10, 96).permute(2, 0, 1),  # softmax over a strided dim
    }[view]
    assert_softmax(sm.softmax(x, -1), x, -1)
    assert_softmax(sm.softmax(x, 0), x, 0)


@pytest.mark.parametrize("shape,dim", [((0, 5), -1), ((3, 0), -1), ((3, 0), 0), ((2, 0, 4), 1), ((0,), 0)])
def test_empty(shape, dim):
    x = torch.empty(shape, dtype=torch.float16, device=DEVICE)
    y = sm.softmax(x, dim)
    assert y.shape == torch.softmax(x.float(), dim).shape and y.dtype == x.dtype
    assert sm.softmax_forward(torch.empty((0, 7), device=DEVICE)).shape == (0, 7)
    assert sm.softmax_backward(*[torch.empty((4, 0), device=DEVICE)] * 2).shape == (4, 0)


def test_zero_dim():
    for dim in (0, -1):
        assert_softmax(sm.softmax(torch.tensor(3.5, device=DEVICE), dim), torch.tensor(3.5, device=DEVICE), dim)
    assert torch.isnan(sm.softmax(torch.tensor(-math.inf, device=DEVICE), 0))
    with pytest.raises(IndexError):
        sm.softmax(torch.tensor(1.0, device=DEVICE), 1)


def test_dtype_casts_before_the_softmax_as_torch_does():
    """softmax(x, dim, dtype=...) is torch.softmax's: x cast to dtype first (an integer tensor too), the result in
    dtype, the gradient back in x's own dtype; a dtype the kernels lack is refused by name."""
    x = make_input((5, 300), torch.float16).requires_grad_(True)
    y = sm.softmax(x, -1, dtype=torch.float32)
    assert y.dtype == torch.float32
    assert_softmax(y, x.detach().float(), -1)
    dy = make_input((5, 300), torch.float32, seed=1)
    y.backward(dy)
    assert_grad(x.grad, reference_grad(x.detach().float(), dy), torch.float16)
    counts = torch.arange(12, device=DEVICE).reshape(3, 4)
    assert_softmax(sm.softmax(counts, 0, dtype=torch.bfloat16), counts.to(torch.bfloat16), 0)
    with pytest.raises(TypeError, match="dtype=torch.float64"):
        sm.softmax(x, -1, dtype=torch.float64)
    assert sm.softmax(x, -1, torch.float32).dtype == torch.float32  # torch.softmax takes it by position too


def test_dim_out_of_range():
    with pytest.raises(IndexError):
        sm.softmax(make_input((3, 4), torch.float32), 2)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.float64, torch.complex64])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match="float16, bfloat16 and float32"):
        sm.softmax(torch.ones(3, 4, device=DEVICE).to(dtype))
    with pytest.raises(TypeError, match="float16, bfloat16 and float32"):
        sm.softmax_forward(torch.ones(3, 4, device=DEVICE).to(dtype))


def test_forward_needs_2d():
    with pytest.raises(ValueError, match="2-D"):
        sm.softmax_forward(make_input((3, 4, 5), torch.float32))


def test_cpu_tensor_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        sm.softmax(torch.randn(3, 4))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [
    (6, 300),     # rows path
    (4, 2048),    # float32 under the H100's L2: rows-lanes (its lanes' own max and sum: -inf lanes, a row of them)
    (3, 40_000),  # exchange_forward: whole chunks of -inf; online_forward: whole blocks of -inf
])
def test_neg_inf_masking(shape, dtype):
    x = make_input(shape, dtype)
    generator = torch.Generator().manual_seed(2)
    x[torch.rand(shape, generator=generator).to(DEVICE) < 0.5] = -math.inf  # partial masks everywhere
    x[0] = -math.inf                                                          # a fully masked row
    x[1, : shape[1] * 3 // 4] = -math.inf                                     # a long masked prefix
    x[2, 1:], x[2, 0] = -math.inf, 1.0                                        # a single survivor
    expected_nan = torch.isnan(torch.softmax(x.double(), -1))
    assert expected_nan[0].all() and not expected_nan[1:].any()
    for forward in [sm.softmax_forward, sm.exchange_forward, sm.online_forward, sm.online_autotuned_forward] + (
            [sm.single_block_forward, sm.single_block_cached_forward] if shape[1] <= sm.MAX_FUSED_SIZE else []):
        y = forward(x)
        assert_softmax(y, x)
        assert (y[1:][x[1:] == -math.inf] == 0).all()  # masked entries are exactly 0


@pytest.mark.parametrize("shape", [(6, 300), (3, 40_000)], ids=lambda shape: f"{shape[0]}x{shape[1]}")
def test_neg_inf_masking_backward(shape):
    x = make_input(shape, torch.float32).requires_grad_(True)
    with torch.no_grad():
        x[0] = -math.inf
        x[1, ::2] = -math.inf
    dy = make_input(shape, torch.float32, seed=1)
    sm.softmax(x).backward(dy)
    assert_grad(x.grad, reference_grad(x, dy), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(7, 300), (2, 40_000)], ids=lambda shape: f"{shape[0]}x{shape[1]}")
def test_rows_sum_to_one(shape, dtype):
    y = sm.softmax(make_input(shape, dtype)).double()
    # each output carries at most FORWARD_TOL's rtol of its own value, so the sum is off by <= rtol
    torch.testing.assert_close(y.sum(-1), torch.ones(shape[0], dtype=torch.float64, device=DEVICE),
                               atol=0, rtol=2 * FORWARD_TOL[dtype][1])


@pytest.mark.parametrize("shape", [(7, 300), (2, 40_000)], ids=lambda shape: f"{shape[0]}x{shape[1]}")
def test_shift_invariance(shape):
    # inputs on a 2^-8 grid below 2^7, so x + 16 and x - 1000 are exact in fp32 (x - max is too)
    x = (make_input(shape, torch.float32) * 256).round() / 256
    atol, rtol = FORWARD_TOL[torch.float32]
    for shift in (16.0, -1000.0):
        torch.testing.assert_close(sm.softmax(x + shift), sm.softmax(x), atol=atol, rtol=rtol)


# ---------------------------------------------------------------------------------------------
# Autograd through softmax()
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [
    ((5, 300), -1),       # rows path
    ((4, 6, 50), 1),      # a middle dim: non-contiguous dy reaches the backward
    ((2, 100_003), -1),   # long-row backward, odd N: row 1 starts mid-vector
])
def test_autograd(shape, dim, dtype):
    x = make_input(shape, dtype).requires_grad_(True)
    dy = make_input(shape, dtype, seed=1)  # random, not ones: sum(y * 1) = 1 would hide the dot term
    sm.softmax(x, dim).backward(dy)
    assert_grad(x.grad, reference_grad(x, dy, dim), dtype)


def test_autograd_zero_dim_and_empty():
    x = torch.tensor(0.7, device=DEVICE, requires_grad=True)
    sm.softmax(x, 0).backward(torch.tensor(2.0, device=DEVICE))
    assert x.grad.item() == 0.0  # softmax of a single element is constant
    empty = torch.empty((3, 0), device=DEVICE, requires_grad=True)
    sm.softmax(empty).sum().backward()
    assert empty.grad.shape == (3, 0)


def test_public_import_is_the_function_even_after_the_module_is_imported():
    from kernels import softmax as public

    assert callable(public) and public is sm.softmax


@pytest.mark.parametrize("n_blocks", [1, 2, 7, 40, 147, 1024, 1025])
@pytest.mark.parametrize("max_segments", [0, 1, 6, 132, 2000])
def test_capped_segments_cover_the_row_in_no_more_than_the_cap(n_blocks, max_segments):
    n_segments, blocks_per_segment = sm._stream_segments(n_blocks * 128, 4, 128, 512, 4, 4)
    capped, per_segment = sm._capped_segments(n_segments, blocks_per_segment, n_blocks, max_segments)
    if not max_segments or n_segments <= max_segments:
        assert (capped, per_segment) == (n_segments, blocks_per_segment)
    assert capped <= (max_segments or n_segments)
    assert (capped - 1) * per_segment < n_blocks <= capped * per_segment  # every block, and no empty segment


def outgrowing_grid(monkeypatch, programs_at_once):
    """Make the persistent grid hold programs_at_once programs: a cut into more segments raises _RowOutgrowsGrid, as
    on a GPU whose rows outgrow it (the interpreter never raises). Returns the segment counts asked for."""
    asked = []
    persistent_programs = sm._persistent_programs

    def persistent(kernel, args, kwargs, n_items, n_segments, programs_per_sm, device):
        asked.append(n_segments)
        if n_segments > programs_at_once:
            raise sm._RowOutgrowsGrid(n_segments, programs_at_once)
        return persistent_programs(kernel, args, kwargs, n_items, n_segments, programs_per_sm, device)
    monkeypatch.setattr(sm, "_persistent_programs", persistent)
    return asked


# 40 blocks of 128 columns a row, in segments of 2 (forward: 4-byte blocks of 512 bytes into 1,024-byte segments) or
# of 1 (backward: y and dy, 1,024 bytes a block): 20 or 40 segments, where 6 programs run at once.
def test_a_row_outgrowing_its_grid_is_cut_into_as_many_segments_as_run_at_once(monkeypatch):
    asked = outgrowing_grid(monkeypatch, 6)
    x = make_input((3, 5000), torch.float32)
    y = torch.empty_like(x)
    sm._run_forward_plan(y, x, sm.Plan("forward", math.inf, 0, 0, "tile-stream", 1, 0, 1, 1, 0, 1024), 4)
    torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=1e-6, rtol=1e-5)
    assert asked == [20, 6]
    dy = make_input((3, 5000), torch.float32, seed=1)
    dx = torch.empty_like(x)
    sm._run_backward_plan(dx, y, dy, sm.Plan("backward", math.inf, 0, 4, "stream", 0, 128, 1, 1, 1, 1024), 4)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    torch.testing.assert_close(dx.double(), expected, atol=1e-6, rtol=1e-5)
    assert asked == [20, 6, 40, 6]


def test_a_row_that_outgrows_its_grid_even_cut_takes_the_online_path(monkeypatch):
    """Where a stream path's grid cannot hold a row's segments at once even cut again (_RowOutgrowsGrid, raised before
    any launch), the dispatcher runs the row on OUTGROWN_*_PLAN's online kernels instead, and the output is right."""
    paths = []
    launch_forward, launch_backward = sm._launch_forward_path, sm._launch_backward_path

    def outgrown(plan, max_segments):
        """Raise for every path but online, after noting which was asked for, and with what cap."""
        paths.append((plan.path, max_segments))
        if plan.path != "online":
            raise sm._RowOutgrowsGrid(7, 5)

    monkeypatch.setattr(sm, "_launch_forward_path", lambda y, x, plan, align, max_segments=0: (
        outgrown(plan, max_segments), launch_forward(y, x, plan, align, max_segments)))
    monkeypatch.setattr(sm, "_launch_backward_path", lambda dx, y, dy, plan, align, max_segments=0: (
        outgrown(plan, max_segments), launch_backward(dx, y, dy, plan, align, max_segments)))
    x = make_input((3, 5000), torch.float32)
    tile_stream = sm.Plan("forward", math.inf, 0, 0, "tile-stream", 2, 0, 32, 1, 0, 16384)
    y = torch.empty_like(x)
    sm._run_forward_plan(y, x, tile_stream, 4)
    torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=1e-6, rtol=1e-5)
    dy = make_input((3, 5000), torch.float32, seed=1)
    stream = sm.Plan("backward", math.inf, 0, 4, "stream", 0, 8192, 32, 1, 1, 262144)
    dx = torch.empty_like(x)
    sm._run_backward_plan(dx, y, dy, stream, 4)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    torch.testing.assert_close(dx.double(), expected, atol=1e-6, rtol=1e-5)
    assert paths == [("tile-stream", 0), ("tile-stream", 5), ("online", 0),
                     ("stream", 0), ("stream", 5), ("online", 0)]
    assert sm.OUTGROWN_FORWARD_PLAN.path == sm.OUTGROWN_BACKWARD_PLAN.path == "online"


def test_every_branch_on_a_warps_own_slot_read_is_one_decision_for_the_program():
    """A branch on slots that each warp reads on its own (the cold paths' entries on _await_row's n_missing or the
    Gluon kernels' missing, and each sibling's slot) must be taken by every warp alike, through _anywhere: warps that
    split there meet at the wrong barriers inside (round 162: tile-stream's and exchange's forced cold paths failed
    every stressed launch). No run on the CPU can show it (the interpreter has no warps), so the source is read."""
    kernels = Path(sm.__file__).parent
    branches = [line.strip() for name in ("triton_softmax.py", "gluon_softmax.py")
                for line in (kernels / name).read_text().splitlines()
                if re.match(r"\s*(if|elif) .*(missing|tl\.load\(slot)", line)]
    assert len(branches) >= 8, branches  # four Triton cold paths, two Gluon ones: entry and each sibling's choice
    for branch in branches:
        before, anywhere, _ = branch.partition("_anywhere(")
        assert anywhere and not re.search(r"missing|tl\.load", before), branch


# ---------------------------------------------------------------------------------------------
# Seeded random tensors against float64: the cases above are chosen; these are drawn
# ---------------------------------------------------------------------------------------------

# The interpreter runs a program at a time, so its draws stay small; a GPU draws rows up to 1.1M columns, through every
# path the table sends them to (tma-stream included, where a draw is contiguous and long enough).
RANDOM_DRAWS = 32 if INTERPRETING else 64
RANDOM_MAX_NUMEL = 6_000 if INTERPRETING else 1 << 23
RANDOM_MAX_COLS = 3_000 if INTERPRETING else 1_100_000


def random_length(rng, max_cols: int) -> int:
    """A softmax dim's length: short (1-64), at a power of two or one off it, or log-uniform up to max_cols."""
    kind = rng.random()
    if kind < 0.3:
        return rng.randint(1, 64)
    if kind < 0.6:
        return min(max_cols, max(1, 2 ** rng.randint(5, max_cols.bit_length() - 1) + rng.choice((-1, 0, 1))))
    return int(math.exp(rng.uniform(math.log(65), math.log(max_cols))))


def random_case(seed: int) -> tuple:
    """(x, dim, dy, description) drawn from seed: any float dtype, 1-4 dims with the softmax dim anywhere (negative
    half the time), sizes that rarely include 0, a contiguous, transposed or sliced view made on the device (so the
    kernels see its strides), rows offset by random amounts, and sometimes -inf entries or a wholly masked row."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    dtype = rng.choice(DTYPES)
    n_dims = rng.randint(1, 4)
    dim = rng.randrange(n_dims)
    n = random_length(rng, RANDOM_MAX_COLS)
    shape = [n if d == dim else 1 for d in range(n_dims)]
    budget = max(1, RANDOM_MAX_NUMEL // n)
    for d in rng.sample([d for d in range(n_dims) if d != dim], n_dims - 1):
        shape[d] = 0 if rng.random() < 0.03 else rng.randint(1, budget)
        budget = max(1, budget // max(1, shape[d]))
    layout = rng.choice(("contiguous", "transposed", "sliced"))
    if layout == "transposed" and n_dims > 1:  # made in the reverse order of dims, then viewed back
        base = torch.randn(shape[::-1], generator=generator).to(dtype).to(DEVICE)
        x = base.permute(*reversed(range(n_dims)))
    elif layout == "sliced":  # every other element from the second, or n from the second, of 2n + 1
        base = torch.randn([2 * n + 1 if d == dim else s for d, s in enumerate(shape)], generator=generator)
        index = [slice(None)] * n_dims
        index[dim] = slice(1, 2 * n + 1, 2) if rng.random() < 0.5 else slice(1, n + 1)
        x = base.to(dtype).to(DEVICE)[tuple(index)]
    else:
        layout = "contiguous"
        x = torch.randn(shape, generator=generator).to(dtype).to(DEVICE)
    offsets = torch.randn([1 if d == dim else s for d, s in enumerate(shape)], generator=generator) * 20
    x.mul_(rng.choice((0.5, 3.0, 12.0))).add_(offsets.to(dtype).to(DEVICE))  # in place: the view keeps its strides
    if x.numel() and rng.random() < 0.3:  # masked entries, and sometimes one softmax row wholly masked
        x.masked_fill_((torch.rand(shape, generator=generator) < rng.choice((0.05, 0.5))).to(DEVICE), float("-inf"))
        if rng.random() < 0.5:
            x[tuple(rng.randrange(s) if d != dim else slice(None) for d, s in enumerate(shape))] = float("-inf")
    dy = torch.randn(shape, generator=generator).to(dtype).to(DEVICE)
    signed_dim = dim - n_dims if rng.random() < 0.5 else dim
    described = (f"seed {seed}: {str(dtype).removeprefix('torch.')} {tuple(shape)} dim {signed_dim} {layout}, "
                 f"strides {x.stride()}")
    return x, signed_dim, dy, described


def cancelling_terms(x, dy, dim) -> float:
    """The largest |y dy| + |y sum(y dy)| (float64): the two terms whose difference dx is. Where a row is nearly one
    element (y ~ 1) and dy there ~ sum(y dy), dx is far smaller than either, and the rounding of y and dy in the input's
    type errs on the terms' scale, torch's own autograd as much as ours (seed 6: bf16, |dx| <= 1.1e-3, both err 3e-4
    where y dy ~ 0.4), so a draw's atol is a fraction of this rather than of the largest |dx|."""
    y = torch.softmax(x.double(), dim)
    product = y * dy.double()
    terms = product.abs() + (y * product.sum(dim, keepdim=True)).abs()
    return terms.nan_to_num(0.0).max().item() if terms.numel() else 0.0


@pytest.mark.parametrize("seed", range(RANDOM_DRAWS))
def test_random_tensors_match_float64_forward_and_backward(seed):
    x, dim, dy, described = random_case(seed)
    try:
        leaf = x.detach().requires_grad_(True)
        y = sm.softmax(leaf, dim)
        assert_softmax(y.detach(), x, dim)
        y.backward(dy)
        assert_grad(leaf.grad, reference_grad(x, dy, dim), x.dtype, cancelling_terms(x, dy, dim))
        if x.numel():  # rows sum to 1, but for wholly masked ones (NaN)
            sums = y.detach().double().sum(dim)
            finite = ~torch.isnan(sums)
            assert torch.allclose(sums[finite], torch.ones_like(sums[finite]), atol=0, rtol=1e-2)
    except AssertionError as error:
        raise AssertionError(f"{described}\n{error}") from None
