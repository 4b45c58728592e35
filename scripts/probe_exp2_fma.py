"""Probe (round 70): part of the 2-byte kernels' exp2s computed on the FMA pipe instead of the MUFU.

Exploration, not evidence. Round 68 found 2-byte tile and tile-stream rows held back by the MIO queue that feeds the
MUFU (ex2), with the FMA pipe half idle. This builds the working tree's module again with a share of each [rows, VEC]
tile's exp2s (every 2nd or 4th column) taken by _exp2_fma below, in pass 1 (the running sums), pass 2 (the write) or
both, and times each variant beside the dispatcher, every element checked against float64 first, and counted where it
differs from the dispatcher's output. fp32 rows take exp, not exp2, and are unaffected; so are the whole-row kernels,
whose tiles are wider than a vector (the rewrite only touches [rows, VEC <= 8] tiles).

    python scripts/probe_exp2_fma.py [fma]        # on a CUDA machine; $OUT/probe_exp2_fma.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_ab import module_from_source  # noqa: E402
from probe_long_rows import (checked_and_timed, forward_input, report, row, run_probes,  # noqa: E402
                             sm, timed)

HELPERS = '''
# 1.5 * 2^23: adding it rounds a float32 of magnitude under 2^22 to an integer, held in the sum's low mantissa bits
EXP2_ROUNDER: tl.constexpr = tl.constexpr(12582912.0)


@triton.jit
def _exp2_fma(d):
    """2^d for float32 d <= 0 on the FMA pipe: 2^round(d) built from exponent bits, times a degree-5 polynomial in
    d - round(d) (relative error under 1.9e-7, as ex2.approx's; exactly 1 at d = 0); under about 2^-126.5 it gives 0,
    as ex2.approx.ftz flushes; -inf gives 0 and NaN stays NaN."""
    d = tl.maximum(d, -127.0, propagate_nan=tl.PropagateNan.ALL)
    rounded = d + EXP2_ROUNDER
    f = d - (rounded - EXP2_ROUNDER)
    p = tl.fma(f, 0.001326472731307149, 0.009671512991189957)
    p = tl.fma(p, f, 0.05550733581185341)
    p = tl.fma(p, f, 0.24022242426872253)
    p = tl.fma(p, f, 0.6931470036506653)
    p = tl.fma(p, f, 1.0)
    # (2^22 + j) * 2^23 wraps to j * 2^23: the bits of 2^j once 127 * 2^23 is added (0.0 at j = -127)
    power = (rounded.to(tl.int32, bitcast=True) * 8388608 + 1065353216).to(tl.float32, bitcast=True)
    return p * power


@triton.jit
def _exp2_split(d, SHARE: tl.constexpr):
    """exp2 of d, with 1/SHARE (2 or 4) of a [rows, VEC] tile's columns on the FMA pipe; other shapes all on MUFU."""
    if SHARE == 0 or len(d.shape) != 2:
        return tl.exp2(d)
    elif d.shape[1] > 8 or d.shape[1] < SHARE:
        return tl.exp2(d)
    else:
        R: tl.constexpr = d.shape[0]
        V: tl.constexpr = d.shape[1]
        even, odd = tl.split(tl.reshape(d, [R, V // 2, 2]))
        if SHARE == 2:
            return tl.reshape(tl.join(_exp2_fma(even), tl.exp2(odd)), [R, V])
        else:
            quad0, quad2 = tl.split(tl.reshape(even, [R, V // 4, 2]))
            even_exp = tl.reshape(tl.join(tl.exp2(quad0), _exp2_fma(quad2)), [R, V // 2])
            return tl.reshape(tl.join(even_exp, tl.exp2(odd)), [R, V])


@triton.jit
def _normalized('''

PASS1 = ("tl.sum(_exp_scaled(x, safe_max[:, None]), axis=1)",
         "tl.sum(_exp2_split(tl.fma(x, LOG2E, -safe_max[:, None]), SHARE_PASS1), axis=1)")
PASS2 = ("return (_exp_scaled(x, row_max, scale) if LOG2 else tl.exp(x - row_max)) * inv_row_sum",
         "return (_exp2_split(tl.fma(x, scale, -row_max), SHARE_PASS2) if LOG2 else tl.exp(x - row_max)) * inv_row_sum")
# (label, share of pass 1's exp2s on FMA, of pass 2's): 0 none, 2 a half, 4 a quarter
VARIANTS = [("pass 2, 1/4 on FMA", 0, 4), ("pass 2, 1/2 on FMA", 0, 2), ("pass 1, 1/4 on FMA", 4, 0),
            ("pass 1, 1/2 on FMA", 2, 0), ("both, 1/4 on FMA", 4, 4)]
NS = [65536, 100000, 262144, 524288, 1048576]


def variant_module(index: int, share_pass1: int, share_pass2: int):
    """The working tree's module with the given shares of its 2-byte tiles' exp2s on the FMA pipe."""
    source = Path(sm.__file__).read_text()
    rewrites = [("\n@triton.jit\ndef _normalized(", HELPERS), PASS1, PASS2,
                ('LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)\n',
                 'LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)\n'
                 f'SHARE_PASS1: tl.constexpr = tl.constexpr({share_pass1})\n'
                 f'SHARE_PASS2: tl.constexpr = tl.constexpr({share_pass2})\n')]
    for old, new in rewrites:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return module_from_source(f"triton_softmax_exp2fma{index}", source)


def differing(fn, x, baseline) -> dict:
    """How many output elements of fn(x) differ from baseline, and by how much at most."""
    y = fn(x)
    diff = (y.float() - baseline.float()).abs()
    return {"differing": int((y != baseline).sum()), "max_abs_diff": float(diff.max()), "elements": y.numel()}


def fma_probe(out: list) -> None:
    """VARIANTS against the dispatcher at 2-byte rows of 65,536-1M columns, and one short control shape."""
    modules = [(label, variant_module(i, p1, p2).softmax_forward) for i, (label, p1, p2) in enumerate(VARIANTS)]
    for n in NS + [8192]:
        for dtype in ("float16", "bfloat16"):
            m, x, moved, ref, scale = forward_input(n, dtype)
            y = torch.empty_like(x)
            copy_ms = timed(lambda: y.copy_(x))["ms"]
            baseline = sm.softmax_forward(x)
            lines = [row("copy", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                     row("dispatcher", timed(sm.softmax_forward, x), moved, copy_ms)]
            for line in checked_and_timed(modules, (x,), ref, scale, dtype, moved, copy_ms):
                fn = dict(modules)[line["variant"].split(" [")[0]]
                line.update(differing(fn, x, baseline))
                line["variant"] += f" ({line['differing']} differ from the dispatcher, max {line['max_abs_diff']:.2e})"
                lines.append(line)
            report("exp2-fma", m, n, dtype, lines, out)
            del x, y, baseline, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    run_probes({"fma": fma_probe}, sys.argv[1:] or ["fma"], "probe_exp2_fma.json")
