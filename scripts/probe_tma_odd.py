"""Probe (round 100, prepared): tma-stream's forward for rows the product leaves on tile-stream because the TMA view
does not divide them: odd rows (100,001 and 777,777 columns) and element counts 64 does not divide.

Exploration, not evidence. kernels/gluon_softmax.py views a tensor as [numel / W, W] (W: 512 bytes of elements), so
it takes only tensors whose element count W (or W / 2) divides, and its stores mask element by element, which splits
a 16-byte store into four (fp32) wherever N is odd. Here:
- the descriptor covers the whole view rows only ([numel // W, W]); the TMA fills the one partial view row at the
  tensor's end with zeros, and the tile that reaches it reads those few elements from global memory instead;
- each tile is stored in two parts: the 16-byte vectors wholly inside the segment with one mask a vector (so the
  compiler keeps 16-byte stores), and, only in a segment's first and last tile, the vectors that straddle its ends
  element by element.
Everything else is the product's kernel (its helpers are imported), without its cold path for a grid that is not
co-resident (the probe waits as long as it takes: max_polls 2^30).

    python scripts/probe_tma_odd.py      # on a CUDA machine (sm_90); writes probe_tma_odd.json
"""
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.tolerances import FORWARD_TOL  # noqa: E402
from kernels.gluon_softmax import (SEGMENT_BYTES, _await_slots, _combine, _cta_barrier, _exp, _issue_tile,  # noqa: E402
                                   _item_span, _new_barriers, _online, _pack, _tile, _tile_offsets)


def whole_tile_segments(n_cols: int, tile: int, segment_bytes: int, elem_bytes: int, spare: int) -> tuple[int, int]:
    """(segments a row, tiles a segment): kernels/gluon_softmax's _segments before round 108, which the tma probes of
    rounds 100-107 measured: even segments of whole tiles, less one tile where a segment may start in a view row."""
    row_tiles = triton.cdiv(n_cols, tile)
    most = max(1, min(segment_bytes // (tile * elem_bytes) - spare, row_tiles))
    n_segments = triton.cdiv(row_tiles, most)
    return n_segments, triton.cdiv(row_tiles, n_segments)


@gluon.jit
def _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype: gl.constexpr, TILE: gl.constexpr,
                 VEC: gl.constexpr, layout: gl.constexpr):
    """Tile i as float32; the elements past the descriptor's last whole view row (covered) from global memory."""
    x = _tile(smem, i, dtype, TILE, VEC, layout)
    if tile_lo + TILE > covered:
        tail = gl.load(input_ptr + flat.to(gl.int64), mask=(flat >= covered) & (flat < numel), other=0.0)
        x = gl.where(flat >= covered, tail.to(gl.float32), x)
    return x


@gluon.jit
def _tma_odd_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols,
                        TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, ALIGN: gl.constexpr,
                        SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, EDGE: gl.constexpr = True,
                        SPLIT: gl.constexpr = True):
    """kernels/gluon_softmax.py's _tma_stream_fwd_kernel for any row length and element count (module docstring).
    Round 101's switches: EDGE=False skips the straddling vectors' stores, SPLIT=False stores each tile with the
    product's element mask instead of the two parts (both for timing only: their outputs are not checked)."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(SLOTS)
    n_cols = n_cols // ALIGN * ALIGN
    offsets = _tile_offsets(TILE, VEC, layout)
    # each vector's first element, one value a vector (so the stores' mask is provably whole vectors)
    vector_starts = gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    numel = n_rows * n_cols
    covered = numel // W * W  # elements the descriptor's whole view rows hold
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles) & (item < n_items):
            _issue_tile(in_desc, smem.index(i), bars.index(i), tile_start + i * TILE, W)
    phases = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                mbarrier.wait(bars.index(i), (phases >> i) & 1)
                tile_lo = tile_start + i * TILE
                flat = tile_lo + offsets
                x = _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype, TILE, VEC, layout)
                vec_max, vec_sum = _online(vec_max, vec_sum, gl.where((flat >= first) & (flat < end), x,
                                                                      float("-inf")))
        phases = phases ^ ((1 << n_tiles) - 1)
        seg_max, seg_sum = _combine(vec_max, vec_sum)
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * _exp(seg_max - row_max))
        else:
            gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
            part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
            part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
            row_max = gl.max(part_max, axis=0)
            inv_row_sum = 1.0 / gl.sum(gl.where(in_row, part_sum * _exp(part_max - row_max), 0.0), axis=0)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, segment_cols, n_cols, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                tile_lo = tile_start + i * TILE
                flat = tile_lo + offsets
                x = _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype, TILE, VEC, layout)
                y = (_exp(x - row_max) * inv_row_sum).to(dtype)
                vector_lo = tile_lo + vector_starts
                whole = (vector_lo >= first) & (vector_lo + VEC <= end)  # one value a vector: 16-byte stores
                if SPLIT:
                    gl.store(output_ptr + flat.to(gl.int64), y, mask=whole & (offsets >= 0))
                    if EDGE & ((tile_lo < first) | (tile_lo + TILE > end)):  # an edge tile: its straddling vectors
                        gl.store(output_ptr + flat.to(gl.int64), y, mask=(flat >= first) & (flat < end) & ~whole)
                else:
                    gl.store(output_ptr + flat.to(gl.int64), y, mask=(flat >= first) & (flat < end))
            if i < next_tiles:
                fence_async_shared()
                _cta_barrier()
                _issue_tile(in_desc, smem.index(i), bars.index(i), next_tile_start + i * TILE, W)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def tma_odd_forward(x: torch.Tensor, num_warps: int = 8, vectors_per_thread: int = 4, edge: bool = True,
                    split: bool = True, spare: int | None = None, align: int | None = None) -> torch.Tensor:
    """The probe's forward: any contiguous [rows, N] on a 16-byte-aligned base, of at least one view row (edge,
    split: the kernel's switches; spare, align: forced in place of what the row length implies)."""
    n_rows, n_cols = x.shape
    elem = x.element_size()
    vec, width = 16 // elem, 512 // elem
    assert x.is_contiguous() and x.data_ptr() % 16 == 0 and x.numel() >= width, "probe: see the docstring"
    tile = num_warps * 32 * vectors_per_thread * vec
    spare = (0 if n_cols % width == 0 else 1) if spare is None else spare
    n_segments, tiles_per_segment = whole_tile_segments(n_cols, tile, SEGMENT_BYTES, elem, spare)
    y = torch.empty_like(x)
    slots = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=2)
    view = x.view(-1)[: x.numel() // width * width].view(-1, width)
    in_desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
    grid = min(torch.cuda.get_device_properties(x.device).multi_processor_count, n_rows * n_segments)
    align = (vec if n_cols % vec == 0 else 1) if align is None else align
    _tma_odd_fwd_kernel[(grid,)](y, x, in_desc, slots, n_rows, n_cols, n_segments, tiles_per_segment * tile,
                                 TILE=tile, SLOTS=tiles_per_segment + spare, VEC=vec, ALIGN=align,
                                 SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=num_warps,
                                 EDGE=edge, SPLIT=split, num_warps=num_warps)
    return y


def diagnose(x: torch.Tensor, out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> None:
    """Where and how a failing output differs from float64: per row, per column mod 4, per 4,096-column tile."""
    bad = ~torch.isclose(out.double(), ref, rtol=rtol, atol=atol, equal_nan=True)
    err = (out.double() - ref).abs().nan_to_num()
    print(f"  {tuple(x.shape)} {x.dtype}: {int(bad.sum())} bad; per row {bad.sum(1).tolist()[:8]}", flush=True)
    print(f"  bad per column mod 4 {[int(bad[:, k::4].sum()) for k in range(4)]}; per tile "
          f"{[int(bad[:, k:k + 4096].sum()) for k in range(0, x.shape[1], 4096)][:30]}", flush=True)
    finite = ref > 0
    ratio = out.double()[finite] / ref[finite]
    probs = torch.tensor([0, .01, .5, .99, 1], dtype=ratio.dtype, device=ratio.device)
    quantiles = [round(float(q), 7) for q in ratio[: 1 << 24].quantile(probs)]
    print(f"  out/ref quantiles {quantiles}; max err {float(err.max()):.3e}", flush=True)
    torch_out = torch.softmax(x, -1)
    torch_bad = ~torch.isclose(torch_out.double(), ref, rtol=rtol, atol=atol, equal_nan=True)
    print(f"  torch.softmax in the same dtype: bad {int(torch_bad.sum())}", flush=True)
    r, c = [int(v) for v in bad.nonzero()[0]]
    print(f"  first bad ({r}, {c}): x {x[r, max(c - 2, 0):c + 3].tolist()} out {out[r, max(c - 2, 0):c + 3].tolist()} "
          f"ref {ref[r, max(c - 2, 0):c + 3].tolist()}", flush=True)


def checks() -> bool:
    """Odd and even rows, element counts W does not divide, -inf masks, a fully -inf row: against float64."""
    ok = True
    for dtype, (atol, rtol) in FORWARD_TOL.items():
        for m, n in ((3, 100001), (5, 777777), (2, 1 << 20), (7, 65541), (1342, 100001), (1, 200003)):
            x = (torch.randn(m, n, device="cuda") * 3).to(dtype)
            x[0, ::5] = float("-inf")
            if m > 2:
                x[1] = float("-inf")
            ref = torch.softmax(x.double(), -1)
            out = tma_odd_forward(x)
            if not torch.isclose(out.double(), ref, rtol=rtol, atol=atol, equal_nan=True).all():
                ok = False
                diagnose(x, out, ref, atol, rtol)
    print("checks passed" if ok else "CHECKS FAILED: timings below are of a wrong kernel", flush=True)
    return ok


WHY_VARIANTS = {"as checked": {}, "no edge stores": {"edge": False}, "product's element mask": {"split": False},
                "forced spare slot": {"spare": 1}, "forced align 1": {"align": 1},
                "forced spare and align 1": {"spare": 1, "align": 1}}


def why(results: list) -> None:
    """Round 101: which of the probe's changes costs the odd rows their speed; each switch timed against the
    dispatcher on one fresh input a shape (outputs of the unchecked switches are not checked)."""
    from probe_long_rows import timed
    from probe_trials import forward_case, sm
    for n, dtype in ((100001, "float32"), (100001, "float16"), (131072, "float32"), (131073, "float32")):
        m, (x,), moved, _, _ = forward_case(n, dtype)
        base = timed(sm.softmax_forward, x)["ms"]
        for name, kwargs in WHY_VARIANTS.items():
            if n % 4 and ("spare" in kwargs or "align" in kwargs):
                continue  # odd rows already take both
            ms = timed(lambda t, kw=kwargs: tma_odd_forward(t, **kw), x)["ms"]
            print(f"why {m}x{n} {dtype} {name}: dispatcher/variant {base / ms:.3f}, {moved / ms / 1e6:.0f} GB/s "
                  f"(dispatcher {moved / base / 1e6:.0f})", flush=True)
            results.append({"probe": f"why: {name}", "cols": n, "dtype": dtype, "rows": m, "ratio": base / ms})
        del x
        torch.cuda.empty_cache()


def ncu_launches() -> None:
    """One launch each of the probe on odd and whole-vector fp32 rows, for ncu (--kernel-name _tma_odd_fwd_kernel)."""
    from probe_trials import forward_case
    for n in (100001, 131072):
        _, (x,), _, _, _ = forward_case(n, "float32")
        tma_odd_forward(x)
        torch.cuda.synchronize()


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    from probe_trials import ab_trials
    if sys.argv[1:] == ["ncu"]:
        ncu_launches()
        sys.exit(0)
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    checks()
    results = []
    if sys.argv[1:] == ["why"]:
        why(results)
        save_results("probe_tma_odd_why.json", results)
        sys.exit(0)
    shapes = [(n, dtype) for dtype in ("float32", "float16", "bfloat16") for n in (100001, 777777)]
    ab_trials("tma odd 8w x4", tma_odd_forward, shapes, results, trials=2)
    ab_trials("tma odd 8w x4, whole vectors (against the product's tma-stream)", tma_odd_forward,
              [(n, "float32") for n in (131072, 1048576)], results, trials=2)
    save_results("probe_tma_odd.json", results)
