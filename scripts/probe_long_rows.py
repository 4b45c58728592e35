"""Probe: can long rows reach copy speed? Streamed two-pass kernels against today's dispatcher.

Exploration for tuning SOFTMAX_PLANS, not evidence: it prints a table (and writes it as JSON to
$OUT/probe_long_rows.json when OUT is set); run artifacts come only from build.py --run. Every
variant is checked against float64 on every element first, then timed like build.py --run
(CUDA-graph replays under triton.testing.do_bench, L2 flushed), beside a device-to-device copy
of the same bytes in the same process. Usage on a CUDA machine:
    python scripts/probe_long_rows.py [forward|tile|unroll|backward|short|short32|mid|evict|evict_tiles|short_tile|band_tile|bands ...]

(The pipelined 1-D "stream" forward it compared in round 4 was replaced by "tile-stream";
its figures are in notes/probes/.)
"""
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab.measure import (bench, capture_graph, check, softmax_grad_reference,  # noqa: E402
                               softmax_reference, warm_up_gpu)
from kernels import triton_softmax as sm  # noqa: E402

ELEMENTS = 1 << 27  # per tensor, as in the bandwidth sweep: several times L2
LONG_NS = [12800, 16384, 32768, 65536, 131072, 262144, 524288, 777777, 1048576]
DTYPES = ["float16", "float32"]
# (vectors per thread, warps, programs per SM) for the tile-online kernel
TILE_CONFIGS = [(1, 32, 2), (1, 16, 4), (2, 8, 8), (2, 8, 4), (2, 16, 2), (2, 32, 1), (1, 8, 8), (4, 8, 2)]
TILE_NS = [12800, 16384, 32768, 65536, 131072, 262144]
# (vectors per thread, warps, programs per SM, segment bytes, unroll) for the tile-stream kernel:
# 132 SMs x programs x segment bytes in flight = 17-34 MB, under L2, at 64 warps per SM
TILE_STREAM_CONFIGS = [
    (2, 32, 1, 262144, 1), (1, 32, 2, 131072, 1), (1, 16, 3, 131072, 1), (1, 16, 3, 262144, 1),
    (1, 8, 6, 131072, 1), (2, 16, 3, 262144, 1), (1, 16, 4, 131072, 1), (2, 8, 6, 131072, 1),
]
TILE_STREAM_NS = [65536, 262144, 1048576]
# (vectors per thread, warps, programs per SM, unroll) for the tile kernel, loops unrolled
UNROLL_CONFIGS = [(1, 32, 2, 1), (1, 32, 2, 2), (2, 32, 1, 1), (2, 32, 1, 2), (2, 32, 1, 4), (4, 32, 1, 1)]
UNROLL_NS = [32768, 65536, 131072]
# (block bytes, warps, programs per SM, stages, segment bytes) for the backward stream kernel;
# stages 1: plain loads, many warps (what made the forward's tile-stream faster)
BACKWARD_CONFIGS = [
    (8192, 8, 2, 4, 131072),
    (4096, 4, 4, 3, 65536),
    (16384, 32, 1, 1, 262144),
    (32768, 32, 1, 1, 262144),
    (16384, 32, 1, 2, 262144),
    (16384, 16, 2, 1, 262144),
    (16384, 32, 1, 1, 131072),
    (32768, 32, 1, 1, 524288),
]
BACKWARD_NS = [32768, 65536, 131072, 262144, 777777, 1048576]
SHORT = [("float16", 12800), ("float16", 1024), ("bfloat16", 1024), ("float32", 1024), ("float32", 2048), ("float32", 4096),
         ("float32", 8192), ("float32", 16384)]
CACHE_VARIANTS = [(".cg", ""), ("", ".cs"), (".cg", ".cs")]  # (load, store) cache modifiers, tried on 4 tiles
SHORT_TILES = [(1, 2), (1, 4), (2, 4), (4, 4), (8, 8), (2, 8), (4, 8), (1, 8), (1, 16), (1, 32), (2, 16)]


def triton_next_pow2(n: int) -> int:
    """The smallest power of two >= n."""
    return 1 << (n - 1).bit_length()


def timed(fn, *args) -> dict:
    """Median and p20-p80 ms of fn(*args) as build.py --run times it."""
    graph = capture_graph(fn, args)
    t = bench(graph.replay if graph is not None else (lambda: fn(*args)))
    return {"ms": t["median_ms"], "p20": t["p20_ms"], "p80": t["p80_ms"]}


def tile_forward(config):
    """A forward callable for one tile-online config."""
    vectors, warps, progs = config

    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        sm._forward_tile_online(y, x, vectors, warps, progs, align)
        return y
    return run


def tile_stream_forward(config):
    """A forward callable for one tile-stream config."""
    vectors, warps, progs, segment, unroll = config

    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        sm._forward_tile_stream(y, x, vectors, warps, progs, segment, align, unroll)
        return y
    return run


def launch_tile_stream_like(kernel, x, vectors, warps, programs_per_sm, segment_bytes, **constexprs):
    """softmax of x by a probe's copy of the tile-stream kernel, set up and launched as the dispatcher's
    (segments, slots, persistent grid, maxnreg); constexprs are the copy's own."""
    y = torch.empty_like(x)
    n_rows, n_cols = x.shape
    align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
    vec = sm._exchange_vec(x.element_size(), x, y)
    tile_rows = 32 * warps * vectors
    segment_bytes = sm._few_rows_segment(segment_bytes, n_rows, n_cols * x.element_size(),
                                         programs_per_sm * sm._sm_count(x.device))
    n_segments, blocks_per_segment = sm._stream_segments(n_cols, x.element_size(), tile_rows * vec, segment_bytes,
                                                         align, vec)
    slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=x.device)
    args = (y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols, n_segments, blocks_per_segment, sm._max_polls())
    kwargs = dict(TILE_ROWS=tile_rows, SEGMENTS_BLOCK=sm._segments_block(n_segments), ALIGN=align, VEC=vec,
                  num_warps=warps, maxnreg=min(255, 65536 // (programs_per_sm * warps * 32) // 8 * 8), **constexprs)
    n_programs = sm._persistent_programs(kernel, args, kwargs, n_rows * n_segments, n_segments, programs_per_sm,
                                         x.device)
    sm._launch(kernel, (n_programs,), *args, **kwargs)
    return y


def tile_unrolled_forward(config):
    """A forward callable for one tile-online config with unrolled loops."""
    vectors, warps, progs, unroll = config

    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        sm._forward_tile_online(y, x, vectors, warps, progs, align, unroll)
        return y
    return run


def plan_forward(**options):
    """The dispatcher's forward with its tile-stream launched with extra launcher options (a probe's)."""
    def run(x):
        y = torch.empty_like(x)
        align = sm._forward_align(y, x)
        plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align)
        assert plan.path == "tile-stream", plan
        sm._forward_tile_stream(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                plan.segment_bytes, align, plan.unroll, sm._log2_exp(x),
                                **{"one_warp_from": plan.one_warp_from, **options})
        return y
    return run


def with_module(fn, **attributes):
    """fn, run with these attributes of the kernels module set (a probe's launch or constant in place of the
    dispatcher's), restored after each call."""
    def run(*args):
        saved = {name: getattr(sm, name) for name in attributes}
        for name, value in attributes.items():
            setattr(sm, name, value)
        try:
            return fn(*args)
        finally:
            for name, value in saved.items():
                setattr(sm, name, value)
    return run


def plan_backward(**options):
    """The dispatcher's backward with its stream launched with extra launcher options (a probe's)."""
    def run(y, dy):
        dx = torch.empty_like(y)
        align = sm._backward_align(dx, y, dy)
        plan = sm._select_plan("backward", *y.shape, y.element_size(), y.device, align)
        assert plan.path == "stream", plan
        sm._backward_stream(dx, y, dy, plan.block_size, plan.num_warps, plan.programs_per_sm, plan.num_stages,
                            plan.segment_bytes, align, **options)
        return dx
    return run


def rows_forward(rows_per_program, warps, load_cache="", store_cache="", load_evict="", store_evict=""):
    """A forward callable for one whole-rows tile (and cache modifiers, L2 eviction policies)."""
    def run(x):
        y = torch.empty_like(x)
        sm._forward_rows(y, x, rows_per_program, warps,
                         sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0)),
                         load_cache, store_cache, load_evict, store_evict)
        return y
    return run


def stream_backward(config):
    """A backward callable for one stream config."""
    block_bytes, warps, progs, stages, segment = config

    def run(y, dy):
        dx = torch.empty_like(y)
        align = sm._vector_align(y.element_size(), y.shape[1], dx.stride(0), y.stride(0), dy.stride(0))
        sm._backward_stream(dx, y, dy, block_bytes // y.element_size(), warps, progs, stages, segment, align)
        return dx
    return run


def row(label, t, moved, copy_ms, passed=True) -> dict:
    """One result line: time, GB/s and share of the copy measured beside it."""
    return {"variant": label, "passed": passed, **t, "gbs": moved / t["ms"] / 1e6, "copy_share": copy_ms / t["ms"]}


def forward_input(n: int, dtype: str):
    """(rows, x, bytes a forward moves, float64 reference, its scale) for 2^27 elements of N columns."""
    m = ELEMENTS // n
    x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
    return (m, x, 2 * x.numel() * x.element_size(), *softmax_reference(x))


def checked_and_timed(variants, args, ref, scale, dtype, moved, copy_ms) -> list:
    """A result line per (label, fn): checked on every element first, timed only if correct."""
    lines = []
    for label, fn in variants:
        try:
            sm._launch_log = []  # the kernels this call launches, for their registers and spills
            try:
                passed = check(fn(*args), ref, dtype, scale)["passed"]
                facts = [sm._kernel_facts(k, h, kw, grid) for k, h, kw, grid in sm._launch_log if h is not None]
            finally:
                sm._launch_log = None
            t = timed(fn, *args) if passed else {"ms": float("inf"), "p20": None, "p80": None}
        except Exception as exc:  # a config that cannot launch (resources) is reported, not fatal
            print(f"  {label}: {type(exc).__name__}: {exc}"[:300], flush=True)
            continue
        regs = ", ".join(f"{f['n_regs']} regs {f['n_spills']} spills" for f in facts)
        lines.append(dict(row(label, t, moved, copy_ms, passed), facts=facts, variant=f"{label} [{regs}]"))
    return lines


def tile_probe(out: list) -> None:
    """Dispatcher, the first tile-stream config and every tile-online config, per N and dtype."""
    for n in TILE_NS:
        for dtype in DTYPES:
            m, x, moved, ref, scale = forward_input(n, dtype)
            lines = [row("dispatcher", timed(sm.softmax_forward, x), moved, 1.0)]
            variants = [(f"tile-stream {TILE_STREAM_CONFIGS[0]}", tile_stream_forward(TILE_STREAM_CONFIGS[0]))]
            variants += [(f"tile {c}", tile_forward(c)) for c in TILE_CONFIGS]
            lines += checked_and_timed(variants, (x,), ref, scale, dtype, moved, 1.0)
            report("tile", m, n, dtype, lines, out)


def forward_configs_probe(kind: str, ns: list, variants: list, out: list, dtypes: list = DTYPES) -> None:
    """Copy, dispatcher and each (label, forward callable) of variants, per N and dtype."""
    for n in ns:
        for dtype in dtypes:
            m, x, moved, ref, scale = forward_input(n, dtype)
            y = torch.empty_like(x)
            copy_ms = timed(lambda: y.copy_(x))["ms"]
            lines = [row("copy", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                     row("dispatcher", timed(sm.softmax_forward, x), moved, copy_ms)]
            lines += checked_and_timed(variants, (x,), ref, scale, dtype, moved, copy_ms)
            report(kind, m, n, dtype, lines, out)
            torch.cuda.empty_cache()


def tile_stream_probe(out: list) -> None:
    """Every tile-stream config, per long N and dtype."""
    forward_configs_probe("tilestream", TILE_STREAM_NS,
                          [(f"tile-stream {c}", tile_stream_forward(c)) for c in TILE_STREAM_CONFIGS], out)


def unroll_probe(out: list) -> None:
    """The tile kernel with unrolled loops, per N and dtype."""
    forward_configs_probe("unroll", UNROLL_NS, [(f"tile {c}", tile_unrolled_forward(c)) for c in UNROLL_CONFIGS], out)


def backward_configs_probe(kind: str, ns: list, variants: list, out: list, dtypes: list = DTYPES) -> None:
    """The 2-read-1-write ceiling, the dispatcher's backward and each (label, backward callable), per N and dtype."""
    for n in ns:
        for dtype in dtypes:
            m = ELEMENTS // n
            x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
            y = sm.softmax_forward(x)
            dy = torch.randn_like(y)
            moved = 3 * y.numel() * y.element_size()
            ref, scale = softmax_grad_reference(y, dy)
            dx = torch.empty_like(y)
            add_ms = timed(lambda: torch.add(y, dy, out=dx))["ms"]
            lines = [row("add", {"ms": add_ms, "p20": None, "p80": None}, moved, add_ms),
                     row("dispatcher", timed(sm.softmax_backward, y, dy), moved, add_ms)]
            lines += checked_and_timed(variants, (y, dy), ref, scale, dtype, moved, add_ms)
            report(kind, m, n, dtype, lines, out)
            torch.cuda.empty_cache()


def backward_probe(out: list) -> None:
    """Dispatcher backward and the stream backward configs, per long N and dtype."""
    backward_configs_probe("backward", BACKWARD_NS, [(f"stream {c}", stream_backward(c)) for c in BACKWARD_CONFIGS],
                           out)


def short_probe(out: list, shapes=None) -> None:
    """Rows-path tiles against torch.compile on the shapes where Inductor was ahead."""
    import torch._dynamo

    torch._dynamo.config.recompile_limit = 64
    compiled = torch.compile(lambda t: torch.softmax(t, -1))
    for dtype, n in shapes or SHORT:
        m, x, moved, ref, scale = forward_input(n, dtype)
        y = torch.empty_like(x)
        copy_ms = timed(lambda: y.copy_(x))["ms"]
        lines = [row("copy", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                 row("torch.compile", timed(compiled, x), moved, copy_ms),
                 row("dispatcher", timed(sm.softmax_forward, x), moved, copy_ms)]
        variants = [(f"rows {rpp}x{warps}w", rows_forward(rpp, warps)) for rpp, warps in SHORT_TILES
                    if rpp * triton_next_pow2(n) <= 64 * 32 * warps]  # > 64 values a thread: spills, skip
        variants += [(f"rows {rpp}x{warps}w {load} {store}", rows_forward(rpp, warps, load, store))
                     for rpp, warps in SHORT_TILES[-4:] if rpp * triton_next_pow2(n) <= 64 * 32 * warps
                     for load, store in CACHE_VARIANTS]
        lines += checked_and_timed(variants, (x,), ref, scale, dtype, moved, copy_ms)
        report("short", m, n, dtype, lines, out)


def short_fp32_probe(out: list) -> None:
    """short_probe on the fp32 shapes where Inductor stayed ahead on the H100 (0.987-0.996x)."""
    short_probe(out, [(dtype, n) for dtype, n in SHORT if dtype == "float32" and n >= 2048])


# fp32 2K-16K on the H100, where Inductor stays 0.4-1.3% ahead: L2 eviction policies on the rows
# kernel's loads and stores (Inductor's kernels carry evict_last / evict_first), each shape
# against a torch.compile compiled for that shape alone.
EVICT_SHAPES = [(2048, 2, 8), (4096, 1, 8), (8192, 1, 16), (16384, 1, 16)]  # (N, rows per program, warps): the table's
EVICT_VARIANTS = [("evict_first", ""), ("", "evict_first"), ("evict_first", "evict_first"), ("evict_last", ""),
                  ("", "evict_last"), ("evict_last", "evict_first")]


def compile_reference_lines(x, moved) -> tuple:
    """(copy ms, [copy, torch.compile, dispatcher lines]) for x; torch.compile compiled for x's shape alone."""
    y = torch.empty_like(x)
    copy_ms = timed(lambda: y.copy_(x))["ms"]
    compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    return copy_ms, [row("copy", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                     row("torch.compile", timed(compiled, x), moved, copy_ms),
                     row("dispatcher", timed(sm.softmax_forward, x), moved, copy_ms)]


def evict_probe(out: list) -> None:
    """The dispatcher's rows tiles with each L2 eviction policy pair, against torch.compile."""
    for n, rows_per_program, warps in EVICT_SHAPES:
        m, x, moved, ref, scale = forward_input(n, "float32")
        copy_ms, lines = compile_reference_lines(x, moved)
        variants = [(f"rows {rows_per_program}x{warps}w load {load or '-'} store {store or '-'}",
                     rows_forward(rows_per_program, warps, "", "", load, store)) for load, store in EVICT_VARIANTS]
        lines += checked_and_timed(variants, (x,), ref, scale, "float32", moved, copy_ms)
        report("evict", m, n, "float32", lines, out)


# With evict_last loads the dispatcher is within 0.5% of torch.compile at fp32 2,048 and 4,096 on the
# H100 (0.995-0.996x): does another whole-row tile, with the same hint, close it?
EVICT_TILES = [(1, 2), (2, 2), (1, 4), (2, 4), (4, 4), (1, 8), (2, 8), (4, 8)]


def evict_tiles_probe(out: list) -> None:
    """Whole-row tiles with evict_last loads at fp32 2,048 and 4,096, against torch.compile."""
    for n in (2048, 4096):
        m, x, moved, ref, scale = forward_input(n, "float32")
        copy_ms, lines = compile_reference_lines(x, moved)
        variants = [(f"rows {rpp}x{warps}w evict_last", rows_forward(rpp, warps, "", "", "evict_last"))
                    for rpp, warps in EVICT_TILES if rpp * n <= 64 * 32 * warps]
        lines += checked_and_timed(variants, (x,), ref, scale, "float32", moved, copy_ms)
        report("evict-tiles", m, n, "float32", lines, out)


# Rows of 16k-32k columns that are not a power of two: the rows kernel pads them to 32,768 lanes
# (24,000 fp16 on the H200: 62% of copy, probe_rows_chunks.py). The tile kernel pads only its last step.
MID_NS = [20000, 24000, 28000, 32768]
MID_TILES = [(1, 16, 4, 1), (1, 32, 2, 1), (2, 32, 1, 4), (2, 32, 1, 2), (1, 16, 4, 2), (2, 16, 2, 2)]


def mid_probe(out: list) -> None:
    """The tile kernel against the dispatcher (rows) for rows of 16k-32k columns, 2-byte and fp32."""
    forward_configs_probe("mid", MID_NS, [(f"tile {c}", tile_unrolled_forward(c)) for c in MID_TILES], out,
                          dtypes=["float16", "bfloat16", "float32"])


# Round 14: 2-byte rows of 8k-16k columns, where rows-pipelined pads each row to 16,384 lanes and
# the H200 sits at 77-88% of copy. The tile kernel pads only its last step of each row.
SHORT_TILE_NS = [8200, 10000, 11264, 12800, 14336, 16384]
SHORT_TILES_2B = [(1, 16, 4, 1), (1, 16, 4, 2), (1, 8, 8, 1), (1, 8, 8, 2), (1, 32, 2, 1), (2, 16, 2, 2), (1, 4, 16, 1)]


def short_tile_probe(out: list) -> None:
    """The tile kernel against the dispatcher (rows-pipelined, rows) for 2-byte rows of 8k-16k columns."""
    forward_configs_probe("short-tile", SHORT_TILE_NS, [(f"tile {c}", tile_unrolled_forward(c)) for c in SHORT_TILES_2B],
                          out, dtypes=["float16", "bfloat16"])


# Round 14, continued: where does the tile kernel's lead at 8,200 columns end?
BAND_TILE_NS = [8200, 8448, 8704, 9000, 9216, 9472, 9728, 10000]
BAND_TILES = [(1, 8, 8, 1), (1, 8, 8, 2), (1, 4, 16, 1), (1, 4, 16, 2)]


def band_tile_probe(out: list) -> None:
    """The tile kernel against the dispatcher (rows-pipelined) for 2-byte rows of 8,200-10,000 columns."""
    forward_configs_probe("band-tile", BAND_TILE_NS, [(f"tile {c}", tile_unrolled_forward(c)) for c in BAND_TILES],
                          out, dtypes=["float16", "bfloat16"])


# Round 18: the H200's weakest bands below long rows, after round 15's exp2 (2-byte rows take exp as
# exp2 of one FMA, so the tile configs here do too). (vectors, warps, programs per SM, unroll); the
# dispatcher's own config of each band is among them.
BAND_CONFIGS = {8200: [(1, 8, 8, 2), (1, 4, 16, 1), (1, 4, 16, 2), (1, 4, 12, 2)],
                10000: [(1, 8, 8, 2), (1, 4, 16, 2), (1, 16, 4, 2)],
                12800: [(1, 8, 8, 2), (1, 4, 16, 2), (1, 16, 4, 2)],
                24000: [(1, 16, 4, 2), (1, 8, 8, 2), (1, 4, 16, 2), (2, 16, 2, 2)],
                32768: [(1, 16, 4, 2), (1, 8, 8, 2), (1, 4, 16, 2)],
                65536: [(2, 32, 1, 4), (1, 32, 2, 2), (1, 16, 4, 2), (1, 8, 8, 2)]}


def tile_log2_forward(config):
    """A forward callable for one tile config, exp as exp2 for 2-byte types (bfloat16 guarded), as the table."""
    vectors, warps, progs, unroll = config

    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        sm._forward_tile_online(y, x, vectors, warps, progs, align, unroll, log2=x.element_size() == 2)
        return y
    return run


def bands_probe(out: list) -> None:
    """Tile configs against the dispatcher on the bands of BAND_CONFIGS, 2-byte types."""
    for n, configs in BAND_CONFIGS.items():
        forward_configs_probe("bands", [n], [(f"tile {c}", tile_log2_forward(c)) for c in configs], out,
                              dtypes=["float16", "bfloat16"])


def report(kind, m, n, dtype, lines, out) -> None:
    """Print one shape's lines, best first, and keep them."""
    print(f"{kind} {m}x{n} {dtype}:", flush=True)
    for line in sorted(lines, key=lambda r: r["ms"]):
        bad = "" if line["passed"] else "  WRONG"
        print(f"  {line['gbs']:7.0f} GB/s {line['ms'] * 1e3:9.1f} us  {line['variant']}{bad}", flush=True)
    out.append({"kind": kind, "rows": m, "cols": n, "dtype": dtype, "lines": lines})


PROBES = {"forward": tile_stream_probe, "tile": tile_probe, "unroll": unroll_probe, "backward": backward_probe,
          "short": short_probe, "short32": short_fp32_probe, "mid": mid_probe, "evict": evict_probe,
          "evict_tiles": evict_tiles_probe, "short_tile": short_tile_probe,
          "band_tile": band_tile_probe, "bands": bands_probe}


def save_results(out_name: str, results: list, key: str = "results") -> None:
    """Write {"device": ..., key: results} as JSON to $OUT/out_name, when OUT is set."""
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out_name).write_text(json.dumps(
            {"device": torch.cuda.get_device_name(), key: results}, indent=1, default=str))


def run_probes(probes: dict, which: list, out_name: str) -> None:
    """Run the named probes in order, printing as they go, and save their lines as $OUT/out_name."""
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    out, start = [], time.time()
    for name in which:
        probes[name](out)
        print(f"-- {name} done at {time.time() - start:.0f} s", flush=True)
    save_results(out_name, out)


def main() -> None:
    """Run the probes named on the command line (default: forward, backward, short)."""
    run_probes(PROBES, sys.argv[1:] or ["forward", "backward", "short"], "probe_long_rows.json")


if __name__ == "__main__":
    main()
