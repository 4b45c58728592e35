"""Probe: the working tree's dispatcher against another version of kernels/triton_softmax.py (round 16).

Exploration, not evidence. Imports the module at AB_BEFORE (a file path: say, `git show
HEAD:kernels/triton_softmax.py > /tmp/before.py`) beside the working tree's, and the working tree's
again with TILE_STREAM_PREFETCH = 0, then times the three dispatchers shape by shape in one process,
each checked against float64 on every element first (the probe's 'dispatcher' line is the working tree).

    AB_BEFORE=/tmp/before.py python scripts/probe_ab.py [ab|backward|odd]   # on a CUDA machine; $OUT/probe_ab.json
    python scripts/probe_ab.py backward_variants|line_bases|knobs|knobs_backward|split|split_backward|...
    (the rest: two_byte_stream, tile_unroll; see the table at the end)
"""
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import backward_configs_probe, forward_configs_probe, run_probes  # noqa: E402


def module_from_source(name: str, source: str):
    """A module imported from source text written to a temporary file."""
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def no_prefetch_source() -> str:
    """The working tree's module with tile-stream's L2 prefetch off."""
    source = Path(sm.__file__).read_text()
    assert "TILE_STREAM_PREFETCH = 1\n" in source
    return source.replace("TILE_STREAM_PREFETCH = 1\n", "TILE_STREAM_PREFETCH = 0\n")


LONG_NS = [100000, 131072, 262144, 524288, 777777, 1048576]
BF16_NS = [8200, 24000, 65536]  # bfloat16 on the tile kernel, whose guard changed


def ab_probe(out: list) -> None:
    """Working tree (dispatcher line), before, and working tree without prefetch, per shape."""
    before = module_from_source("triton_softmax_before", Path(os.environ["AB_BEFORE"]).read_text())
    no_prefetch = module_from_source("triton_softmax_no_prefetch", no_prefetch_source())
    variants = [("after", sm.softmax_forward), ("before", before.softmax_forward),
                ("no prefetch", no_prefetch.softmax_forward)]
    forward_configs_probe("ab", LONG_NS, variants, out, dtypes=["float16", "bfloat16", "float32"])
    forward_configs_probe("ab", BF16_NS, variants, out, dtypes=["bfloat16"])


BACKWARD_NS = [65536, 131072, 262144, 777777, 1048576]
ALL = ["float16", "bfloat16", "float32"]


def backward_ab_probe(out: list) -> None:
    """Working tree's backward (dispatcher line) against AB_BEFORE's, per long N and dtype."""
    before = module_from_source("triton_softmax_before", Path(os.environ["AB_BEFORE"]).read_text())
    backward_configs_probe("ab-backward", BACKWARD_NS, [("after", sm.softmax_backward),
                                                        ("before", before.softmax_backward)], out, ALL)


# Round 20: the backward's pass-1 loop for float32, which LLVM unrolls 4x: a sum per vector (V = 4, which
# spilled at 1M in round 19) and/or the unrolling disabled (loop_unroll_factor=1), against the working tree.
V_LINE = "    V: tl.constexpr = 8 if output_ptr.dtype.element_ty.primitive_bitwidth == 16 else 1\n"
LOOP_LINE = "                          num_stages=NUM_STAGES):\n        offsets = block * BLOCK_SIZE + tile\n"
PER_VECTOR = (V_LINE, V_LINE.replace("else 1", "else 4"))
NOT_UNROLLED = (LOOP_LINE, LOOP_LINE.replace("num_stages=NUM_STAGES)", "num_stages=NUM_STAGES, loop_unroll_factor=1)"))
REWRITES = {"fp32 per vector": [PER_VECTOR], "pass 1 not unrolled": [NOT_UNROLLED],
            "fp32 per vector, not unrolled": [PER_VECTOR, NOT_UNROLLED]}


def rewritten(name: str, rewrites: list):
    """The working tree's module with each (old, new) text of rewrites replaced once."""
    source = Path(sm.__file__).read_text()
    for old, new in rewrites:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return module_from_source(name, source)


def backward_variants_probe(out: list) -> None:
    """The working tree's backward (dispatcher line) against REWRITES of it, per long N and dtype."""
    variants = [("after", sm.softmax_backward)] + [(label, rewritten(f"triton_softmax_v{i}", edits).softmax_backward)
                                                   for i, (label, edits) in enumerate(REWRITES.items())]
    backward_configs_probe("backward-variants", [131072, 262144, 777777, 1048576], variants, out,
                           ["float32", "float16"])


# Round 21: row bases aligned down to 128-byte lines instead of 16-byte vectors, so that a warp's 512-byte
# step of a row whose start is not line-aligned (odd N) touches 4 lines, not 5.
LINE_BASES = [("    in_base = in_start // VEC * VEC\n", "    in_base = in_start // (8 * VEC) * (8 * VEC)\n")]


def line_bases_probe(out: list) -> None:
    """The working tree (dispatcher line) against line-aligned row bases, forward and backward."""
    lined = rewritten("triton_softmax_lines", LINE_BASES)
    forward_configs_probe("line-bases", [777777, 1048576], [("after", sm.softmax_forward),
                                                             ("line bases", lined.softmax_forward)], out, ALL)
    backward_configs_probe("line-bases-backward", [777777], [("after", sm.softmax_backward),
                                                             ("line bases", lined.softmax_backward)], out, ALL)


# Round 56: odd rows on row-tiles, the working tree against AB_BEFORE (b29de4a's kernels), the table's bands
ODD_TWO_BYTE_NS = [6001, 10001, 12801, 16001, 20001, 24001, 28001, 40001, 50001]


def odd_ab_probe(out: list) -> None:
    """Working tree (dispatcher line) against AB_BEFORE on rows that are not whole vectors, 6k-50k columns."""
    before = module_from_source("triton_softmax_before", Path(os.environ["AB_BEFORE"]).read_text())
    variants = [("after", sm.softmax_forward), ("before", before.softmax_forward)]
    forward_configs_probe("odd-ab", ODD_TWO_BYTE_NS, variants, out, dtypes=["float16", "bfloat16"])
    forward_configs_probe("odd-ab", [10001, 12801], variants, out, dtypes=["float32"])


# Rounds 57-59, prepared without a GPU and committed off: a persistent grid's last round that would fill at most half
# of it runs apart (BALANCE_TAIL), a row's segments as even as whole blocks allow (EVEN_SEGMENTS), the tile kernel's
# write reads an odd row's edges in one batch (TILE_EDGE_BATCH), and the write of the tile and tile-stream kernels
# (TILE_WRITE_PAIRS) and of the backward's stream kernel (STREAM_WRITE_PAIRS) reads its tiles two at a time. Each
# variant sets the knobs it names, whatever the working tree's defaults are, and the others off (its own dispatcher
# is the 'dispatcher' line). BALANCE_TAIL lost on both GPUs (rounds 60 and 92) and left the module in round 92; the
# variants that set it ('tail apart, even segments', 'all four', 'pairs, tail apart...') are in git history before
# that commit, as they ran.
KNOBS = ("EVEN_SEGMENTS", "TILE_EDGE_BATCH", "TILE_WRITE_PAIRS", "STREAM_WRITE_PAIRS")
FORWARD_VARIANTS = {"none (c60f2b1)": (), "even segments": ("EVEN_SEGMENTS",),
                    "edge batch": ("TILE_EDGE_BATCH",), "write pairs": ("TILE_WRITE_PAIRS",),
                    "all three": ("EVEN_SEGMENTS", "TILE_EDGE_BATCH", "TILE_WRITE_PAIRS")}
BACKWARD_VARIANTS = {"none (c60f2b1)": (), "write pairs": ("STREAM_WRITE_PAIRS",)}


# 2-byte tile-stream (262,144 columns and more) with its loops unrolled twice: pass 1's loads two tiles at a time, as
# the tile kernel's are (offline sm_90: 64 registers, 0-8 bytes spilled with the write pairs, 16 for aligned bf16)
TWO_BYTE_TILE_STREAM = 'Plan("forward",  math.inf,        0,  2, "tile-stream", 2,    0,    32,    1,    0, 229376, '
UNROLLED_TWICE = (TWO_BYTE_TILE_STREAM + "one_warp_from=2,", TWO_BYTE_TILE_STREAM + "one_warp_from=2, unroll=2,")


def with_knobs(name: str, on: tuple, rewrites: tuple = ()):
    """The working tree's module with the KNOBS named in on set True and the rest False, and rewrites made."""
    source = Path(sm.__file__).read_text()
    assert all(source.count(f"\n{knob} = True\n") + source.count(f"\n{knob} = False\n") == 1 for knob in KNOBS)
    return rewritten(name, [(f"\n{knob} = {knob not in on}\n", f"\n{knob} = {knob in on}\n") for knob in KNOBS
                            if f"\n{knob} = {knob not in on}\n" in source] + list(rewrites))


def knobs_probe(out: list) -> None:
    """FORWARD_VARIANTS at 100,000-100,001 columns (1,342 rows: the last round holds 22), at odd 2-byte rows of the
    tile kernel's edges-apart band whose rounds are full enough (65,535, 131,071), and at long rows of the tile and
    tile-stream kernels, which only the write pairs change (65,536-1M)."""
    variants = [(label, with_knobs(f"triton_softmax_k{i}", on).softmax_forward)
                for i, (label, on) in enumerate(FORWARD_VARIANTS.items())]
    variants.append(("write pairs, 2-byte tile-stream unrolled 2x",
                     with_knobs("triton_softmax_k_unrolled", ("TILE_WRITE_PAIRS",), (UNROLLED_TWICE,)).softmax_forward))
    forward_configs_probe("knobs", [100000, 100001], variants, out, ALL)
    forward_configs_probe("knobs", [65535, 131071], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("knobs", [65536, 131072, 262144, 1048576], variants, out, ["float16", "float32"])
    forward_configs_probe("knobs", [777777], variants, out, ["float16"])


# Round 60, after the first knobs probe (H100, notes/probes/2026-11-25-h100-knobs.json): the write pairs only on rows
# of more than 128 KB (the working tree's default), against pairs everywhere, and which of BALANCE_TAIL and
# EVEN_SEGMENTS gave fp32 100,000-100,001 their +6% (2-byte lost 2% with both).
EVERYWHERE = ("\nWRITE_PAIRS_ABOVE_ROW_BYTES = 131072\n", "\nWRITE_PAIRS_ABOVE_ROW_BYTES = 0\n")
PAIRS = ("TILE_WRITE_PAIRS", "STREAM_WRITE_PAIRS")
SPLIT_VARIANTS = {"none (c60f2b1)": (), "pairs over 128 KB": PAIRS, "pairs, even segments": PAIRS + ("EVEN_SEGMENTS",)}


def split_variants(attribute: str) -> list:
    """(label, module.attribute) of SPLIT_VARIANTS, plus the pairs on rows of every length."""
    variants = [(label, getattr(with_knobs(f"triton_softmax_s{i}", on), attribute))
                for i, (label, on) in enumerate(SPLIT_VARIANTS.items())]
    return variants + [("pairs everywhere", getattr(with_knobs("triton_softmax_s_all", PAIRS, (EVERYWHERE,)),
                                                    attribute))]


def knobs_split_probe(out: list) -> None:
    """split_variants of the forward at 100,000-100,001 (1,342 rows), 64K, 131,072 and 777,777 columns."""
    variants = split_variants("softmax_forward")
    forward_configs_probe("split", [100000, 100001, 777777], variants, out, ["float16", "float32"])
    forward_configs_probe("split", [65535, 65536, 131072], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("split", [65536], variants, out, ["float32"])


def knobs_split_backward_probe(out: list) -> None:
    """split_variants of the backward at 64K-1M columns."""
    backward_configs_probe("split-backward", [65536, 100000, 131072, 262144, 777777, 1048576],
                           split_variants("softmax_backward"), out, ["float16", "float32"])


# Round 61: 2-byte rows of 57k-131k columns on tile-stream in segments of 128 KB (100,000 columns: two segments, so
# 2,684 items in 20.3 rounds, where the tile kernel's 1,342 rows take 10.2 and cap it at 92.4%), as fp32 100,000 runs
# (87-89% of copy on the H100 since round 60), against the table's tile kernel.
TILE_LINE = '    Plan("forward",    131072,        2,  2, "tile",       2,     0,    32,    1,    0,      0, 2, True),\n'


def two_byte_stream_plan(max_cols: int, segment_bytes: int) -> tuple:
    """A rewrite putting 2-byte rows of up to max_cols columns (2 rows an SM or more) on tile-stream, in segments of
    segment_bytes, ahead of the table's tile rows."""
    plan = (f'    Plan("forward", {max_cols}, 2, 2, "tile-stream", 2, 0, 32, 1, 0, {segment_bytes}, '
            f'one_warp_from=2),\n')
    return TILE_LINE, plan + TILE_LINE


STREAM_VARIANTS = {"to 131,071, 128 KB": (131071, 131072), "to 131,072, 128 KB": (131072, 131072),
                   "to 131,071, 96 KB": (131071, 98304), "to 131,071, 64 KB": (131071, 65536)}


def two_byte_stream_probe(out: list) -> None:
    """STREAM_VARIANTS against the table at 2-byte rows of 65,535-131,072 columns."""
    variants = [(f"tile-stream {label}", rewritten(f"triton_softmax_ts{i}", [two_byte_stream_plan(*args)])
                 .softmax_forward) for i, (label, args) in enumerate(STREAM_VARIANTS.items())]
    forward_configs_probe("two-byte-stream", [100000, 100001, 131071, 131072, 65535, 80000, 98304, 120001], variants,
                          out, ["float16", "bfloat16"])


# Round 62: the 2-byte tile kernel's loops unrolled 4x at 65,537-131,072 columns, as at 65,536 (90.5% of copy on the
# H100 against 131,072's 87%), where the table unrolls them 2x. Offline (sm_90, Triton 3.6, 64 registers, with the
# write pairs): no spills, aligned or edges apart, fp16 or bf16.
TILE_ODD_LINE = ('    Plan("forward",    131072,        2,  2, "tile",       2,     0,    32,    1,    0,      0, 2, '
                 'partial_vectors=True,\n')
UNROLL_VARIANTS = {"whole vectors unrolled 4x": [(TILE_LINE, TILE_LINE.replace("0, 2, True)", "0, 4, True)"))],
                   "edges apart unrolled 4x": [(TILE_ODD_LINE,
                                                TILE_ODD_LINE.replace("0, 2, partial", "0, 4, partial"))]}
UNROLL_VARIANTS["both unrolled 4x"] = (UNROLL_VARIANTS["whole vectors unrolled 4x"]
                                       + UNROLL_VARIANTS["edges apart unrolled 4x"])


def tile_unroll_probe(out: list) -> None:
    """UNROLL_VARIANTS against the table at 2-byte rows of 65,536-131,072 columns (65,536: unchanged, a control)."""
    variants = [(label, rewritten(f"triton_softmax_u{i}", rewrites).softmax_forward)
                for i, (label, rewrites) in enumerate(UNROLL_VARIANTS.items())]
    forward_configs_probe("tile-unroll", [65536, 80000, 98304, 100000, 100001, 120001, 131071, 131072], variants, out,
                          ["float16", "bfloat16"])


def knobs_backward_probe(out: list) -> None:
    """BACKWARD_VARIANTS at the backward's stream rows (65,536-1M)."""
    variants = [(label, with_knobs(f"triton_softmax_kb{i}", on).softmax_backward)
                for i, (label, on) in enumerate(BACKWARD_VARIANTS.items())]
    backward_configs_probe("knobs-backward", [65536, 131072, 262144, 1048576], variants, out, ["float16", "float32"])


# Round 66: tile-stream's segments small enough for L1. Round 65 found that on Hopper the L1 (256 KB an SM, less the
# shared memory a kernel takes) is what serves pass 2's re-reads: 32 KB of shared memory taken and never used cost 8% at
# rows of 256 KB. A 256 KB segment overflows the ~248 KB left; 224 and 192 KB segments fit (more siblings a row). Each
# variant gives every forward tile-stream row of the table one segment size; the first H100 runs compared them with the
# The table's forward tile-stream rows (2-byte, fp32), each with its segment bytes and shorter segment bytes (round
# 72); the table before round 66 (256 KB everywhere) is what the "segments of 256 KB" variant stands for.
STREAM_PLANS = ('''    Plan("forward",  math.inf,        0,  2, "tile-stream", 2,    0,    32,    1,    0, 229376, one_warp_from=2,
         shorter_segment_bytes=196608),''',
                '''    Plan("forward",  math.inf,        0,  4, "tile-stream", 2,    0,    32,    1,    0, 229376,
         shorter_segment_bytes=196608),''')


def stream_segments_rewrites(segment_bytes: int) -> list:
    """Rewrites giving every forward tile-stream plan of the table segments of segment_bytes, and no other cut."""
    return [(lines, re.sub(r"\b(229376|196608)\b", str(segment_bytes), lines)) for lines in STREAM_PLANS]


def segment_variants(sizes_kb) -> list:
    """(label, forward) with every tile-stream plan at each of sizes_kb."""
    return [(f"segments of {kb} KB", rewritten(f"triton_softmax_seg{kb}", stream_segments_rewrites(kb * 1024))
             .softmax_forward) for kb in sizes_kb]


def segments_probe(out: list) -> None:
    """The forward's tile-stream in segments of 256, 224 and 192 KB against the table, 131,072-1M columns."""
    variants = segment_variants((256, 224, 192))
    forward_configs_probe("segments", [262144, 524288, 777777, 1048576], variants, out, ["float16"])
    forward_configs_probe("segments", [131072, 262144, 1048576], variants, out, ["float32"])


def segments_more_probe(out: list) -> None:
    """After segments_probe: 160-256 KB at every tile-stream shape of the sweep, all three dtypes."""
    variants = segment_variants((256, 224, 192, 160))
    forward_configs_probe("segments-more", [262144, 524288, 777777, 1048576], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("segments-more", [100000, 131072, 262144, 524288, 777777, 1048576], variants, out,
                          ["float32"])


TWO_BYTE_STREAM_PLAN = STREAM_PLANS[0]


def segments_two_byte_probe(out: list) -> None:
    """Round 72: 2-byte tile-stream rows of 655,360-1M columns in 192 KB segments against the table (at commit 9e6249a,
    where it ran: 224 KB; round 66 had measured 1M +1.0-1.4% and 777,777 -0.5% with 192 KB)."""
    variant = rewritten("triton_softmax_seg2b192", [(TWO_BYTE_STREAM_PLAN, TWO_BYTE_STREAM_PLAN.replace("229376",
                                                                                                      "196608"))])
    variants = [("2-byte segments of 192 KB", variant.softmax_forward)]
    forward_configs_probe("segments-2byte", [655360, 777777, 851968, 917504, 983040, 1048576], variants, out,
                          ["float16"])
    forward_configs_probe("segments-2byte", [777777, 1048576], variants, out, ["bfloat16"])


if __name__ == "__main__":
    run_probes({"ab": ab_probe, "backward": backward_ab_probe, "backward_variants": backward_variants_probe,
                "line_bases": line_bases_probe, "odd": odd_ab_probe, "knobs": knobs_probe,
                "knobs_backward": knobs_backward_probe, "split": knobs_split_probe,
                "split_backward": knobs_split_backward_probe,
                "two_byte_stream": two_byte_stream_probe, "tile_unroll": tile_unroll_probe,
                "segments": segments_probe, "segments_more": segments_more_probe,
                "segments_two_byte": segments_two_byte_probe},
               sys.argv[1:] or ["ab"], "probe_ab.json")
