"""Probe: an A/B of the dispatcher against a variant, repeated on fresh tensors (round 72).

Exploration, not evidence. One A/B in one process compares two kernels on the same two buffers, but how fast a
memory-bound kernel runs also depends on where its buffers lie (the same process's torch copy of a 172 x 777,777 fp16
tensor ran 19% slower than of a 2^27-element one, round 72). This times the dispatcher and the variant on several fresh
inputs per shape (each allocated after the last trial's are freed, with a spacer of a varying size before it so the
next lands elsewhere), alternating which goes first, every output checked against float64, and reports each trial's
ratio and their median.

    AB_BEFORE=/tmp/before.py python scripts/probe_trials.py segment_rule   # on a CUDA machine; $OUT/probe_trials.json

Round 72's first two uses of it timed, against the table of commit 9e6249a, 2-byte rows in 192 KB segments and fp32 rows
with 224 and 192 KB swapped (rewrites of the table's tile-stream rows, as probe_ab.py's segments_two_byte does; that
version of this file was not committed): notes/probes/2026-11-25-h100-trials-segments-*.json.
"""
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_ab import module_from_source, rewritten  # noqa: E402
from probe_long_rows import (ELEMENTS, check, forward_input, save_results, sm, softmax_grad_reference,  # noqa: E402
                             timed, warm_up_gpu)


def forward_case(n: int, dtype: str):
    """(rows, call arguments, bytes a call moves, float64 reference, its scale) of a fresh forward input."""
    m, x, moved, ref, scale = forward_input(n, dtype)
    return m, (x,), moved, ref, scale


def backward_case(n: int, dtype: str):
    """The same for the backward: y = softmax of a fresh input, a fresh dy, dx's float64 reference."""
    m = ELEMENTS // n
    y = sm.softmax_forward((torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype)))
    dy = torch.randn_like(y)
    return m, (y, dy), 3 * y.numel() * y.element_size(), *softmax_grad_reference(y, dy)


def ab_trials(label: str, variant, shapes, out: list, baseline=None, trials: int = 5, case=forward_case) -> None:
    """baseline (the dispatcher's forward unless given) against variant on trials fresh inputs (case) per (N, dtype)
    of shapes."""
    baseline = baseline or sm.softmax_forward
    for n, dtype in shapes:
        ratios, gbs = [], []
        for trial in range(trials):
            spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")  # moves the next buffers
            m, args, moved, ref, scale = case(n, dtype)
            assert check(variant(*args), ref, dtype, scale)["passed"], (label, n, dtype)
            pair = [("table", baseline), ("variant", variant)]
            times = dict((name, timed(fn, *args)["ms"]) for name, fn in (pair if trial % 2 == 0 else pair[::-1]))
            ratios.append(times["table"] / times["variant"])
            gbs.append((moved / times["table"] / 1e6, moved / times["variant"] / 1e6))
            del args, ref, scale, spacer
            torch.cuda.empty_cache()
        line = {"probe": label, "cols": n, "dtype": dtype, "rows": m, "ratios": ratios,
                "median_ratio": statistics.median(ratios), "gbs_table_variant": gbs}
        print(f"{label} {m}x{n} {dtype}: variant/table median {line['median_ratio']:.4f}, trials "
              + " ".join(f"{r:.3f}" for r in ratios) + "; table GB/s " + " ".join(f"{t:.0f}" for t, _ in gbs),
              flush=True)
        out.append(line)


def before_module():
    """The softmax module at AB_BEFORE (a file path)."""
    return module_from_source("triton_softmax_trials_before", Path(os.environ["AB_BEFORE"]).read_text())


def segment_rule(out: list) -> None:
    """The working tree (SHORTER_SEGMENT_GAIN's choice of cut) against the module at AB_BEFORE (224 KB for 2-byte rows,
    224 KB to 524,288 fp32 columns and 192 KB past it), at rows where the two cut differently, none of them among
    the 14 shapes the rule was fitted on."""
    before = before_module()
    shapes = [(n, "float16") for n in (300000, 400000, 560000, 720000, 880000, 960000, 1040000)]
    shapes += [(n, "float32") for n in (160000, 200000, 460000, 560000, 640000, 740000, 840000, 920000, 1000000)]
    ab_trials("segment-rule", sm.softmax_forward, shapes, out, baseline=before.softmax_forward, trials=3)


def segment_rule_sweep(out: list) -> None:
    """segment_rule at the sweep's tile-stream rows whose cut changed (2-byte 777,777 and 1M, fp32 524,288), and
    four of segment_rule's own, again: does the rule's gain hold in another session, on another H100?"""
    before = before_module()
    shapes = [(777777, "float16"), (1048576, "bfloat16"), (524288, "float32"), (400000, "float16"),
              (880000, "float16"), (200000, "float32"), (560000, "float32")]
    ab_trials("segment-rule-again", sm.softmax_forward, shapes, out, baseline=before.softmax_forward, trials=3)


WAIT_TABLE = "TILE_STREAM_WAIT_PREFETCH = {2: 2, 4: 1}\n"


def wait_tiles(two_byte: int, fp32: int) -> list:
    """A rewrite of TILE_STREAM_WAIT_PREFETCH to these tiles for 2-byte and fp32 rows."""
    return [(WAIT_TABLE, f"TILE_STREAM_WAIT_PREFETCH = {{2: {two_byte}, 4: {fp32}}}\n")]


# Round 73 ran these at commit d15a4b1, whose table waited with one tile for both sizes: so the baseline here is the
# module rewritten back to that (wait_tiles(1, 1)).
PREFETCH_VARIANTS = {"prefetch 2 tiles ahead": [("TILE_STREAM_PREFETCH = 1\n", "TILE_STREAM_PREFETCH = 2\n")]
                     + wait_tiles(1, 1),
                     "no prefetch ahead": [("TILE_STREAM_PREFETCH = 1\n", "TILE_STREAM_PREFETCH = 0\n")]
                     + wait_tiles(1, 1),
                     "2 tiles while waiting": wait_tiles(2, 2),
                     "none while waiting": wait_tiles(0, 0)}


def prefetch_again(out: list) -> None:
    """Round 73: tile-stream's two L2 prefetches (one tile ahead in pass 1, rounds 16 and 37; one tile of the next
    item while waiting, round 30), tuned on 256 KB segments, against one step more and none, on today's cuts."""
    one = rewritten("triton_softmax_trials_prefetch_base", wait_tiles(1, 1)).softmax_forward
    shapes = [(262144, "float16"), (777777, "float16"), (1048576, "bfloat16"), (262144, "float32"),
              (524288, "float32"), (1048576, "float32")]
    for i, (label, rewrites) in enumerate(PREFETCH_VARIANTS.items()):
        ab_trials(label, rewritten(f"triton_softmax_trials_prefetch{i}", rewrites).softmax_forward, shapes, out,
                  baseline=one, trials=3)


def wait_prefetch_two_byte(out: list) -> None:
    """Round 73, after prefetch_again: 2, 3 and 4 tiles of the next item while waiting, 2-byte rows."""
    shapes = [(262144, "float16"), (524288, "float16"), (777777, "float16"), (1048576, "float16"),
              (262147, "float16"), (262144, "bfloat16"), (1048576, "bfloat16")]
    one = rewritten("triton_softmax_trials_wait1", wait_tiles(1, 1)).softmax_forward  # the table as round 73 found it
    for tiles in (2, 3, 4):
        variant = rewritten(f"triton_softmax_trials_wait{tiles}", wait_tiles(tiles, 1))
        ab_trials(f"{tiles} tiles while waiting", variant.softmax_forward, shapes, out, baseline=one, trials=3)


def backward_wait_prefetch(out: list) -> None:
    """Round 74: the backward's 2-byte stream rows prefetch 1 or 2 blocks of y and dy of their next item while they
    wait (STREAM_WAIT_PREFETCH), against none, the table. Runs at commit 87ce4b0, whose kernel takes WAIT_PREFETCH
    (removed after the round: it was not adopted)."""
    shapes = [(131072, "float16"), (262144, "float16"), (524288, "float16"), (777777, "float16"),
              (1048576, "float16"), (262144, "bfloat16"), (1048576, "bfloat16")]
    for blocks in (1, 2):
        variant = rewritten(f"triton_softmax_trials_bwait{blocks}", [(
            "STREAM_WAIT_PREFETCH = {2: 0, 4: 0}\n", f"STREAM_WAIT_PREFETCH = {{2: {blocks}, 4: 0}}\n")])
        ab_trials(f"backward, {blocks} blocks while waiting", variant.softmax_backward, shapes, out,
                  baseline=sm.softmax_backward, trials=3, case=backward_case)


def segment_rule_with_wait(out: list) -> None:
    """After round 73: does round 72's shorter cut still pay for 2-byte rows now that they prefetch two tiles while
    waiting? The working tree against itself without the 2-byte row's shorter cut (224 KB always)."""
    plan = 'one_warp_from=2,\n         shorter_segment_bytes=196608),'
    fixed = rewritten("triton_softmax_trials_no_shorter", [(plan, plan.replace("196608", "0"))]).softmax_forward
    shapes = [(n, "float16") for n in (300000, 400000, 560000, 777777, 880000, 983040, 1048576)]
    ab_trials("shorter cut, with two tiles while waiting", sm.softmax_forward, shapes + [(1048576, "bfloat16")], out,
              baseline=fixed, trials=3)


FP32_STREAM_PLAN = 'Plan("forward",  math.inf,        0,  4, "tile-stream", 2,    0,    32,    1,    0, 229376,\n'
POLLING_VARIANTS = {"fp32: one warp re-reads the slots from 8 segments": [
                        (FP32_STREAM_PLAN, FP32_STREAM_PLAN.replace("229376,\n", "229376, one_warp_from=8,\n"))],
                    "poll sleep 250 ns": [("POLL_SLEEP_NS = 500\n", "POLL_SLEEP_NS = 250\n")],
                    "poll sleep 1000 ns": [("POLL_SLEEP_NS = 500\n", "POLL_SLEEP_NS = 1000\n")],
                    "no poll sleep": [("POLL_SLEEP_NS = 500\n", "POLL_SLEEP_NS = 0\n")]}


def fp32_polling(out: list) -> None:
    """Round 75: how fp32 tile-stream rows of 16 segments or more wait for their siblings (every warp re-reads the
    slots, sleeping POLL_SLEEP_NS between re-reads: rounds 26, 33), tuned on 256 KB segments, against one warp
    re-reading (as the 2-byte rows and the fp32 backward do) and other sleeps, at today's cuts."""
    shapes = [(n, "float32") for n in (777777, 917504, 1048576)]
    for i, (label, rewrites) in enumerate(POLLING_VARIANTS.items()):
        ab_trials(label, rewritten(f"triton_softmax_trials_poll{i}", rewrites).softmax_forward, shapes, out,
                  trials=3)


def write_pairs_again(out: list) -> None:
    """Round 76: the write pairs (TILE_WRITE_PAIRS, round 59: pass 2 reads two tiles before it stores either) were
    adopted when pass 2 re-read its tiles from L2; since round 66 tile-stream's re-reads come from L1. Pairs off
    against the table, at tile-stream rows and one tile-kernel row (2-byte 131,072)."""
    variant = rewritten("triton_softmax_trials_no_pairs", [("TILE_WRITE_PAIRS = True\n", "TILE_WRITE_PAIRS = False\n")])
    shapes = [(262144, "float16"), (1048576, "float16"), (777777, "bfloat16"), (262144, "float32"),
              (1048576, "float32"), (131072, "float16")]
    ab_trials("write pairs off", variant.softmax_forward, shapes, out, trials=3)


def inductor_config(compiled, x) -> list:
    """The launch configs Inductor's autotuner kept for compiled after a call on x (read off its CachingAutotuners)."""
    import gc
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    compiled(x)
    torch.cuda.synchronize()
    def autotuner(obj) -> bool:
        try:
            return isinstance(obj, CachingAutotuner)
        except ReferenceError:  # a dead weak proxy among gc's objects
            return False
    return [f"{a.fn.__name__}: {l.config} regs {getattr(l, 'n_regs', '?')} spills {getattr(l, 'n_spills', '?')}"
            for a in gc.get_objects() if autotuner(a) for l in a.launchers]


def two_pass_forward(block: int, warps: int):
    """probe_inductor's Inductor-shaped two-pass kernel (one row a program, evict_last then evict_first loads)."""
    from probe_inductor import two_pass
    return two_pass(block, warps)


def rows_variant(rows: int, warps: int, load_evict: str = "evict_last", store_cache: str = "", reload_evict: str = ""):
    """The rows kernel at this tile and these hints (the dispatcher's is 2 x 8 warps at 2,048, 1 x 8 at 4,096);
    reload_evict needs the kernel of commit b35409c (round 78)."""
    def run(x):
        y = torch.empty_like(x)
        reload = {"reload_evict": reload_evict} if reload_evict else {}
        sm._forward_rows(y, x, rows, warps, sm._vector_align(4, x.shape[1], x.stride(0), y.stride(0)),
                         store_cache=store_cache, load_evict=load_evict, **reload)
        return y
    return run


def against_compile(out: list) -> None:
    """fp32 1,024-8,192, where torch.compile stays 0.3-0.5% ahead of the rows kernel at 2,048 and 4,096 in every
    H100 sweep: which config did Inductor's autotuner keep, and does the dispatcher, the rows kernel in other tiles,
    or the two-pass kernel in Inductor's shape tie it, on fresh inputs? Baseline: torch.compile (ratio > 1: the
    variant is faster)."""
    for n in (2048, 4096, 1024, 8192):
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        x = forward_case(n, "float32")[1][0]
        configs = inductor_config(compiled, x)
        print(f"fp32 {n}: Inductor kept", configs, flush=True)
        out.append({"probe": "inductor-config", "cols": n, "configs": configs})
        del x
        variants = {"dispatcher": sm.softmax_forward,
                    "rows 1x4w": rows_variant(1, 4), "rows 1x8w": rows_variant(1, 8), "rows 2x8w": rows_variant(2, 8),
                    "rows 1x16w": rows_variant(1, 16), "rows 2x16w": rows_variant(2, 16),
                    "rows 2x8w .cs stores": rows_variant(2, 8, store_cache=".cs"),
                    "two-pass 1024x8w": two_pass_forward(1024, 8), "two-pass 2048x8w": two_pass_forward(2048, 8),
                    "two-pass 2048x16w": two_pass_forward(2048, 16), "two-pass 4096x16w": two_pass_forward(4096, 16)}
        for label, fn in variants.items():
            ab_trials(f"{label} vs torch.compile", fn, [(n, "float32")], out, baseline=compiled, trials=3)


TWO_BYTE_STREAM_PLAN = 'one_warp_from=2,\n         shorter_segment_bytes=196608),'
BACKWARD_FP32_PLAN = 'math.inf,        0,  4, "stream",     0,  8192,    32,    1,    1, 262144, one_warp_from=8),'
BACKWARD_TWO_BYTE_PLAN = '"stream",     0, 16384,    32,    1,    1, 262144, slot_lanes=32,\n         maxnreg=64),\n)'
RETUNE_FORWARD = {"2-byte: every warp re-reads the slots": [(TWO_BYTE_STREAM_PLAN, TWO_BYTE_STREAM_PLAN.replace(
                      "one_warp_from=2", "one_warp_from=0"))],
                  "2-byte: one warp from 6 segments": [(TWO_BYTE_STREAM_PLAN, TWO_BYTE_STREAM_PLAN.replace(
                      "one_warp_from=2", "one_warp_from=6"))],
                  "poll sleep from 8 segments": [("POLL_SLEEP_MIN_SEGMENTS = 16\n", "POLL_SLEEP_MIN_SEGMENTS = 8\n")]}
RETUNE_BACKWARD = {"fp32 1M: one warp from 40 segments (never)": [(BACKWARD_FP32_PLAN, BACKWARD_FP32_PLAN.replace(
                       "one_warp_from=8", "one_warp_from=40"))],
                   "2-byte 1M: 16 slot lanes": [(BACKWARD_TWO_BYTE_PLAN, BACKWARD_TWO_BYTE_PLAN.replace(
                       "slot_lanes=32", "slot_lanes=16"))],
                   "2-byte 1M: no register cap": [(BACKWARD_TWO_BYTE_PLAN, BACKWARD_TWO_BYTE_PLAN.replace(
                       "maxnreg=64", "maxnreg=0"))]}


def retune_waits(out: list) -> None:
    """Round 77: the waits' settings chosen before round 66 (one warp re-reading the slots for 2-byte rows from 2
    segments, round 33; sleeping between re-reads from 16 segments, 26; the backward's one warp from 8 segments and
    its 2-byte slot vector of 32 lanes under 64 registers, 33 and 35), against other values on today's cuts."""
    forward = [(262144, "float16"), (524288, "float16"), (777777, "float16"), (1048576, "float16"),
               (1048576, "bfloat16")]
    for i, (label, rewrites) in enumerate(RETUNE_FORWARD.items()):
        shapes = [(n, "float32") for n in (393216, 524288, 655360)] if "sleep" in label else forward
        ab_trials(label, rewritten(f"triton_softmax_trials_retune{i}", rewrites).softmax_forward, shapes, out,
                  trials=3)
    for i, (label, rewrites) in enumerate(RETUNE_BACKWARD.items()):
        shapes = ([(n, "float32") for n in (524288, 1048576)] if "fp32" in label
                  else [(1048576, "float16"), (1048576, "bfloat16"), (777777, "float16")])
        ab_trials(label, rewritten(f"triton_softmax_trials_bretune{i}", rewrites).softmax_backward, shapes, out,
                  baseline=sm.softmax_backward, trials=3, case=backward_case)


def reload_rows(out: list) -> None:
    """Round 78: the rows kernel reading its rows again for the write (RELOAD_EVICT, from L1), as the kernel Inductor
    keeps does (2 rows x 16 warps at 2,048 columns; 1 x 16 at 4,096 and 8,192), against torch.compile, fp32. Runs at
    commit b35409c, whose kernel takes RELOAD_EVICT (removed after round 80: not adopted)."""
    tiles = {1024: [(2, 8), (1, 8), (2, 16)], 2048: [(2, 16), (2, 8), (1, 8), (1, 16), (4, 16)],
             4096: [(1, 16), (1, 8), (2, 16)], 8192: [(1, 16), (2, 16)]}
    for n, shapes in tiles.items():
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled, trials=3)
        for rows, warps in shapes:
            for policy in ("evict_first", "evict_last"):
                ab_trials(f"rows {rows}x{warps}w reload {policy} vs torch.compile",
                          rows_variant(rows, warps, reload_evict=policy), [(n, "float32")], out, baseline=compiled,
                          trials=3)


def one_warp_few_segments(out: list) -> None:
    """Round 77, again: 2-byte tile-stream rows of 3-5 segments with every warp re-reading the slots (one warp only
    from 6), which gained 0.5-1.3% at 262,144 and 524,288 in retune_waits; here on other inputs and shapes."""
    variant = rewritten("triton_softmax_trials_one_warp6", RETUNE_FORWARD["2-byte: one warp from 6 segments"])
    shapes = [(262144, "float16"), (262144, "bfloat16"), (300000, "float16"), (393216, "float16"),
              (450000, "bfloat16"), (524288, "float16"), (524288, "bfloat16"), (262147, "float16")]
    ab_trials("2-byte: one warp from 6 segments", variant.softmax_forward, shapes, out, trials=4)


TWO_BYTE_STREAM_ROW = ('    Plan("forward",  math.inf,        0,  2, "tile-stream", 2,    0,    32,    1,    0, '
                       '229376, one_warp_from=2,\n         shorter_segment_bytes=196608),\n')
WHOLE_VECTOR_ROW = TWO_BYTE_STREAM_ROW.replace("229376, one_warp_from=2,", "229376, whole_vectors=True,").replace(
    "         shorter", "         one_warp_from=6, shorter")


def one_warp_whole_vectors(out: list) -> None:
    """Round 79: every warp re-reads the slots for 2-byte rows of whole vectors in 2-5 segments (one warp from 6),
    odd rows unchanged; on shapes none of round 77's trials used. Adopted if the median gain is 1% or more and no
    shape loses more than 2% (round 72's bar)."""
    variant = rewritten("triton_softmax_trials_whole_one_warp6", [(TWO_BYTE_STREAM_ROW, WHOLE_VECTOR_ROW
                                                                   + TWO_BYTE_STREAM_ROW)])
    shapes = [(140000, "float16"), (160000, "bfloat16"), (200000, "float16"), (240000, "float16"),
              (280000, "bfloat16"), (320000, "float16"), (350000, "bfloat16"), (420000, "float16"),
              (480000, "float16"), (500000, "bfloat16"), (600000, "float16"), (300001, "float16")]
    ab_trials("whole vectors: one warp from 6 segments", variant.softmax_forward, shapes, out, trials=3)


ROWS_CALL = "_forward_rows(y, x, plan.rows_per_program, plan.num_warps, align, load_evict=ROWS_LOAD_EVICT, log2=log2)"
EVEN_ROWS = [(ROWS_CALL, ROWS_CALL[:-1] + ", even=True)")]


def even_rows(out: list) -> None:
    """Round 80: the rows kernel without masks (EVEN) where a row is a power of two and the rows divide evenly, as
    Inductor's kernel for a static shape is: the dispatcher so rewritten against torch.compile (fp32 1,024-8,192)
    and against the table (2-byte 1,024-16,384). Runs at commit b35409c, whose kernel takes EVEN (removed after the
    round: not adopted)."""
    variant = rewritten("triton_softmax_trials_even", EVEN_ROWS).softmax_forward
    for n in (2048, 4096, 1024, 8192):
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled, trials=3)
        ab_trials("even rows vs torch.compile", variant, [(n, "float32")], out, baseline=compiled, trials=3)
    shapes = [(n, dtype) for n in (1024, 2048, 4096, 8192, 16384) for dtype in ("float16", "bfloat16")]
    ab_trials("even rows", variant, shapes, out, trials=3)


def l2_head_forward(segment_blocks: int, l1_blocks: int, head_priority: bool = False):
    """Tile-stream in segments of segment_blocks 32 KB tiles whose tiles before the last l1_blocks are read around L1
    (.cg) in both passes (round 81), the table's other settings for the element size; head_priority (round 82, at the
    commit that has it): only the head's lines are prefetched with L2's evict-last priority."""
    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        two_byte = x.element_size() == 2
        sm._forward_tile_stream(y, x, 2, 32, 1, segment_blocks * 32768, align, log2=two_byte,
                                one_warp_from=2 if two_byte else 0, l1_blocks=l1_blocks,
                                **({"head_priority": True} if head_priority else {}))
        return y
    return run


L2_HEAD_CASES = {(1048576, "float32"): [(11, 7), (12, 7), (11, 6)], (524288, "float32"): [(11, 7), (11, 6)],
                 (262144, "float32"): [(11, 7), (8, 7)], (1048576, "float16"): [(11, 7), (11, 6), (13, 7)],
                 (262144, "float16"): [(8, 7), (8, 6)], (262144, "bfloat16"): [(8, 7)],
                 (131072, "float16"): [(8, 7)], (65536, "float32"): [(8, 7)], (777777, "float16"): [(12, 7)]}


def l2_head(out: list) -> None:
    """Round 81: segments longer than L1 holds, their head read around L1 (.cg) in both passes so that it evicts
    none of the rest, against the table; (segment tiles, tiles L1 keeps) per shape. Runs at commit dca20bb, whose
    kernel takes L1_BLOCKS (removed after the round: not adopted)."""
    for shape, configs in L2_HEAD_CASES.items():
        for blocks, l1_blocks in configs:
            ab_trials(f"segments of {blocks} tiles, the last {l1_blocks} in L1", l2_head_forward(blocks, l1_blocks),
                      [shape], out, trials=3)


def l2_head_priority(out: list) -> None:
    """Round 82: round 81's heads came back from DRAM (ncu). Every input line was prefetched with L2's evict-last
    priority, the heads' too, so they had none over the rest: here only the heads' lines are, the rest prefetched
    with the normal priority. Against the table, at round 81's least-losing cuts. Runs at commit c3a4cc0, whose
    kernel takes HEAD_PRIORITY (removed after the round: not adopted)."""
    for shape, (blocks, l1_blocks) in {(262144, "float16"): (8, 7), (262144, "bfloat16"): (8, 7),
                                       (262144, "float32"): (8, 7), (131072, "float16"): (8, 7),
                                       (1048576, "float32"): (11, 6), (1048576, "float16"): (11, 6)}.items():
        ab_trials(f"segments of {blocks} tiles, the last {l1_blocks} in L1, heads kept in L2",
                  l2_head_forward(blocks, l1_blocks, head_priority=True), [shape], out, trials=3)


C60F2B1 = Path(__file__).resolve().parent.parent / "notes" / "probes" / "modules" / "triton_softmax_c60f2b1.py.txt"
SINCE_C60F2B1_FORWARD = [(n, dtype) for n in (65536, 100000, 100001, 131072, 262144, 524288, 777777, 1048576)
                         for dtype in ("float16", "bfloat16", "float32")]
SINCE_C60F2B1_BACKWARD = [(n, dtype) for n in (131072, 262144, 1048576) for dtype in ("float16", "bfloat16", "float32")]


def since_c60f2b1(out: list) -> None:
    """Round 89: the working tree's dispatcher against c60f2b1's (the last kernels an H200 ran before rounds 57-83,
    which were tuned on H100s), forward and backward, at the long rows those rounds changed. One process, fresh
    inputs, so that the H200s' machine-to-machine spread (round 88: up to 8 points between two runs) cancels.
    ratio > 1: today's kernels are faster."""
    before = module_from_source("triton_softmax_c60f2b1", C60F2B1.read_text())
    ab_trials("today against c60f2b1", sm.softmax_forward, SINCE_C60F2B1_FORWARD, out,
              baseline=before.softmax_forward, trials=3)
    ab_trials("today against c60f2b1, backward", sm.softmax_backward, SINCE_C60F2B1_BACKWARD, out,
              baseline=before.softmax_backward, trials=3, case=backward_case)


# Round 90: the H200's segments. Round 89 found c60f2b1's 256 KB segments faster on the H200 than today's (H100-tuned)
# 224/192 KB ones at 2-byte 262,144 (forward) and 131,072-262,144 (backward).
BACKWARD_STREAM_192 = [(f'{lanes},    32,    1,    1, 196608,', f'{lanes},    32,    1,    1, 262144,')
                       for lanes in (' 8192', '16384')]
FORWARD_SEGMENTS = {
    2: ('229376, one_warp_from=2,\n         shorter_segment_bytes=196608),',
        '{segment}, one_warp_from=2,\n         shorter_segment_bytes={shorter}),'),
    4: ('229376,\n         shorter_segment_bytes=196608),', '{segment},\n         shorter_segment_bytes={shorter}),')}


def forward_segments(segment: int, shorter: int, elem_bytes=(2, 4)) -> list:
    """Rewrites giving tile-stream rows of elem_bytes segments of segment bytes, or shorter (0: no shorter cut)."""
    return [(old, new.format(segment=segment, shorter=shorter))
            for size, (old, new) in FORWARD_SEGMENTS.items() if size in elem_bytes]


H200_FORWARD = [(100000, "float32"), (100001, "float32"), (131072, "float32")] + [
    (n, dtype) for n in (262144, 524288, 777777, 1048576) for dtype in ("float16", "bfloat16", "float32")]
H200_BACKWARD = [(n, dtype) for n in (100000, 131072, 262144) for dtype in ("float16", "bfloat16", "float32")]


def h200_segments(out: list) -> None:
    """Round 90: the dispatcher against 256 KB backward segments (A), 256 KB forward segments without the shorter cut
    (B; 2-byte rows only: C), and 224 KB forward segments without it (D). ratio > 1: the variant is faster."""
    backward = rewritten("triton_softmax_r90a", BACKWARD_STREAM_192)
    ab_trials("A backward segments of 256 KB", backward.softmax_backward, H200_BACKWARD, out, trials=3,
              baseline=sm.softmax_backward, case=backward_case)
    for label, edits in (("B forward segments of 256 KB, no shorter cut", forward_segments(262144, 0)),
                         ("C 2-byte forward segments of 256 KB, no shorter cut", forward_segments(262144, 0, (2,))),
                         ("D forward segments of 224 KB, no shorter cut", forward_segments(229376, 0))):
        ab_trials(label, rewritten(f"triton_softmax_r90{label[0]}", edits).softmax_forward, H200_FORWARD, out,
                  trials=3)


def with_settings(name: str, **settings):
    """A copy of the working tree's module with module-level settings replaced (read at call time by the host code)."""
    module = module_from_source(name, Path(sm.__file__).read_text())
    for setting, value in settings.items():
        assert hasattr(module, setting), setting
        setattr(module, setting, value)
    return module


def with_plans(name: str, path: str, **changes):
    """A copy of the working tree's module whose SOFTMAX_PLANS rows of path, for every L2, take changes."""
    module = with_settings(name)
    module.SOFTMAX_PLANS = tuple(plan._replace(**changes) if plan.path == path else plan
                                 for plan in module.SOFTMAX_PLANS)
    return module


def resized(name: str, path: str, segment_bytes: int):
    """with_plans cutting path's rows (tile-stream or stream) in segments of segment_bytes and no shorter ones."""
    return with_plans(name, path, segment_bytes=segment_bytes, shorter_segment_bytes=0)


LONGER_FORWARD = [(131072, "float32")] + [(n, dtype) for n in (262144, 524288, 777777, 1048576)
                                          for dtype in ("float16", "bfloat16", "float32")]
LONGER_BACKWARD = [(n, dtype) for n in (262144, 524288, 1048576) for dtype in ("float16", "bfloat16", "float32")]


def longer_segments(out: list) -> None:
    """Round 91: the dispatcher against every tile-stream row in segments of 288, 320 and 384 KB, and every backward
    stream row in segments (y and dy together) of 320, 384 and 512 KB. ratio > 1: the variant is faster."""
    for kb in (288, 320, 384):
        ab_trials(f"forward segments of {kb} KB", resized(f"triton_softmax_r91f{kb}", "tile-stream", kb << 10)
                  .softmax_forward, LONGER_FORWARD, out, trials=3)
    for kb in (320, 384, 512):
        ab_trials(f"backward segments of {kb} KB", resized(f"triton_softmax_r91b{kb}", "stream", kb << 10)
                  .softmax_backward, LONGER_BACKWARD, out, trials=3, baseline=sm.softmax_backward, case=backward_case)


EDGE_SHAPES = [(n, dtype) for n in (65535, 100001, 131071) for dtype in ("float16", "bfloat16")]
PAIRS_SHAPES = [(n, dtype) for n in (65535, 65536) for dtype in ("float16", "bfloat16")]


def knobs_on_h200(out: list) -> None:
    """Round 92: the settings rounds 57-60 left off, or limited, on H100 evidence alone, one at a time against the
    dispatcher on an H200: TILE_EDGE_BATCH at odd 2-byte rows of the tile kernel's edges-apart band, and write pairs on
    rows of 128 KB too (WRITE_PAIRS_ABOVE_ROW_BYTES = 0) at 2-byte 65,535-65,536. ratio > 1: the variant is faster.
    Its first line, BALANCE_TAIL at 100,000-100,001 (1,342 rows, all three dtypes), ran before that knob left the
    module (the commit before round 92's removal has it)."""
    for label, settings, shapes in (("edge batch", {"TILE_EDGE_BATCH": True}, EDGE_SHAPES),
                                    ("write pairs on 128 KB rows", {"WRITE_PAIRS_ABOVE_ROW_BYTES": 0}, PAIRS_SHAPES)):
        ab_trials(label, with_settings(f"triton_softmax_r92_{label[:4]}", **settings).softmax_forward, shapes, out,
                  trials=3)


IN_FLIGHT_SHAPES = ([(n, "float32") for n in (131072, 262144, 524288, 1048576)]
                    + [(n, dtype) for n in (262144, 1048576) for dtype in ("float16", "bfloat16")]
                    + [(524288, "float16"), (777777, "float16")])


def in_flight_h200(out: list) -> None:
    """Round 94: the tile-stream rows (the GPU takes its own) unrolled twice, at 4 vectors a thread a step, and with
    L2 asked two steps ahead, each against the dispatcher. ratio > 1: the variant is faster."""
    variants = (("unrolled twice", with_plans("triton_softmax_r94a", "tile-stream", unroll=2)),
                ("4 vectors a thread a step", with_plans("triton_softmax_r94b", "tile-stream", rows_per_program=4)),
                ("L2 asked two steps ahead", with_settings("triton_softmax_r94c", TILE_STREAM_PREFETCH=2)))
    for label, module in variants:
        ab_trials(label, module.softmax_forward, IN_FLIGHT_SHAPES, out, trials=3)


def sixteen_warps(out: list) -> None:
    """Round 95: the tile-stream rows (the GPU takes its own) as one 16-warp program an SM (128 registers a thread) at
    4 vectors a thread a step, unrolled twice (64 KB of loads in flight an SM) and once (32 KB, as today), each
    against the dispatcher. ratio > 1: the variant is faster."""
    for label, unroll in (("16 warps, 4 vectors, unrolled twice", 2), ("16 warps, 4 vectors", 1)):
        module = with_plans(f"triton_softmax_r95_{unroll}", "tile-stream", num_warps=16, rows_per_program=4,
                            unroll=unroll)
        ab_trials(label, module.softmax_forward, IN_FLIGHT_SHAPES, out, trials=3)


CARVEOUT_SHAPES = [(131072, "float32"), (262144, "float32"), (1048576, "float32"), (262144, "float16"),
                   (1048576, "float16")]


def tile_stream_functions(x) -> list:
    """The CUfunction handles of the kernels one dispatcher forward of x launches."""
    sm._launch_log = []
    try:
        sm.softmax_forward(x)
        return [handle.function for _, handle, *_ in sm._launch_log if handle is not None]
    finally:
        sm._launch_log = None


def set_carveout(functions, percent: int) -> None:
    """cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT = 9, percent) on each function (-1: the driver's choice,
    0: the most L1, 100: the most shared memory)."""
    import ctypes
    libcuda = ctypes.CDLL("libcuda.so.1")
    for function in functions:
        assert libcuda.cuFuncSetAttribute(ctypes.c_void_p(function), 9, percent) == 0, percent


def carveout(out: list) -> None:
    """Round 96: the tile-stream kernels with the L1/shared split left to the driver (-1, the product today) against
    the most L1 (0) and the most shared memory (100), three fresh inputs a shape, each timing on a graph captured after
    the attribute was set. ratio > 1: the preference is faster than the driver's choice."""
    for n, dtype in CARVEOUT_SHAPES:
        for percent in (0, 100):
            ratios = []
            for trial in range(3):
                m, (x,), moved, ref, scale = forward_case(n, dtype)
                functions = tile_stream_functions(x)
                times = {}
                for setting in ((-1, percent) if trial % 2 == 0 else (percent, -1)):
                    set_carveout(functions, setting)
                    assert check(sm.softmax_forward(x), ref, dtype, scale)["passed"]
                    times[setting] = timed(sm.softmax_forward, x)["ms"]
                set_carveout(functions, -1)
                ratios.append(times[-1] / times[percent])
                del x, ref, scale
                torch.cuda.empty_cache()
            line = {"probe": f"carveout {percent}", "cols": n, "dtype": dtype, "rows": m, "ratios": ratios,
                    "median_ratio": statistics.median(ratios)}
            print(f"carveout {percent} {m}x{n} {dtype}: median {line['median_ratio']:.4f}, trials "
                  + " ".join(f"{r:.3f}" for r in ratios), flush=True)
            out.append(line)


def no_prefetch(out: list) -> None:
    """Round 97: tile-stream without its L2 prefetch (TILE_STREAM_PREFETCH = 0) against the dispatcher. ratio > 1: the
    variant is faster."""
    ab_trials("no L2 prefetch", with_settings("triton_softmax_r97", TILE_STREAM_PREFETCH=0).softmax_forward,
              IN_FLIGHT_SHAPES, out, trials=3)


def table_130(out: list) -> None:
    """Round 130: the working tree's table (6 of 4 and 5 of 5 of 8 KB on both GPUs, rows off view rows past 131,072
    cut on view rows; the H200's backward to 131,072 on 6 programs) against the module at AB_BEFORE, at rows where
    either GPU's launch changed, most of them no sweep has: a ratio over 1, the new table is faster. The rows a GPU
    did not change are its controls."""
    before = before_module()
    shapes = [(61440, "float16"), (49152, "float32"), (65536, "bfloat16"), (65536, "float32"), (98304, "float16"),
              (196608, "bfloat16"), (393216, "float32"), (1048576, "float32"), (1048576, "bfloat16"),
              (2097152, "float16"), (120001, "float32"), (150001, "float32"), (600001, "float32"),
              (2000001, "float32"), (150001, "bfloat16"), (300000, "float16"), (600001, "bfloat16"),
              (1000001, "float16")]
    ab_trials("table 130", sm.softmax_forward, shapes, out, baseline=before.softmax_forward, trials=3)
    shapes = [(40960, "float32"), (65536, "bfloat16"), (98304, "float16"), (120000, "float32"), (131072, "float16"),
              (262144, "float32")]
    ab_trials("table 130, backward", sm.softmax_backward, shapes, out, baseline=before.softmax_backward, trials=3,
              case=backward_case)


PROBES = {probe.__name__: probe for probe in (segment_rule, segment_rule_sweep, prefetch_again, wait_prefetch_two_byte,
                                              segment_rule_with_wait, backward_wait_prefetch, fp32_polling,
                                              write_pairs_again, against_compile,
                                              retune_waits, reload_rows, one_warp_few_segments,
                                              one_warp_whole_vectors, even_rows, l2_head,
                                              l2_head_priority, since_c60f2b1, h200_segments,
                                              longer_segments, knobs_on_h200,
                                              in_flight_h200, sixteen_warps,
                                              carveout, no_prefetch, table_130)}


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    results = []
    for name in sys.argv[1:] or ["segment_rule"]:
        PROBES[name](results)
    save_results("probe_trials.json", results)
