"""Probe (round 84): what Inductor's kernel does at fp32 2,048-8,192 that the rows kernel does not.

Exploration, not evidence. Rounds 77, 78 and 80 put the rows kernel at Inductor's own tiles, with its re-read and
without masks, and it stayed 0.2-0.4% behind torch.compile at fp32 2,048 and 4,096. What was never looked at is
Inductor's code itself. For fp32 2,048, 4,096 and 8,192 this saves, for an offline diff against the rows kernel:
Inductor's generated module (torch._inductor.utils.run_and_get_code), and for every launcher its autotuner kept, the
config, registers, spills, PTX and cubin; and the same of the dispatcher's rows kernel after a call on the same input.
It then times torch.compile against the dispatcher on fresh inputs (probe_trials.ab_trials, graphs and L2 flushes as
build.py --run), so the diff can be read against the gap of this very machine.

    python scripts/probe_inductor_code.py   # on a CUDA machine; $OUT/inductor/*, $OUT/probe_inductor_code.json
    python scripts/probe_inductor_code.py bare   # Inductor's kernel on our launch; $OUT/probe_inductor_bare.json
"""
import gc
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials, forward_case  # noqa: E402

OUT = Path(os.environ.get("OUT", "."))
SAVED = OUT / "inductor"


def _autotuners() -> list:
    """Every live CachingAutotuner (Inductor's kernel objects)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    def autotuner(obj) -> bool:
        try:
            return isinstance(obj, CachingAutotuner)
        except ReferenceError:  # a dead weak proxy among gc's objects
            return False
    return [a for a in gc.get_objects() if autotuner(a)]


def save_binary(prefix: str, kernel) -> dict:
    """Write a compiled Triton kernel's PTX, TTGIR and cubin under SAVED; its registers, spills and metadata."""
    asm = getattr(kernel, "asm", {})
    for key, suffix in (("ptx", "ptx"), ("ttgir", "ttgir"), ("cubin", "cubin")):
        if key in asm:
            data = asm[key]
            (SAVED / f"{prefix}.{suffix}").write_bytes(data if isinstance(data, bytes) else data.encode())
    meta = getattr(kernel, "metadata", None)
    return {"n_regs": getattr(kernel, "n_regs", None), "n_spills": getattr(kernel, "n_spills", None),
            "num_warps": getattr(meta, "num_warps", None), "shared": getattr(meta, "shared", None)}


def inductor_code(n: int) -> dict:
    """Inductor's module and kept launchers for fp32 rows of n, saved under SAVED."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    x = forward_case(n, "float32")[1][0]
    _, codes = run_and_get_code(compiled, x)
    for i, code in enumerate(codes):
        (SAVED / f"inductor_{n}_module{i}.py").write_text(code)
    kept = []
    for a in _autotuners():
        for j, launcher in enumerate(a.launchers):
            binary = getattr(launcher, "bin", None)
            info = {"kernel": a.fn.__name__, "config": str(launcher.config)}
            if binary is not None:
                info.update(save_binary(f"inductor_{n}_{a.fn.__name__}_{j}", binary))
            kept.append(info)
    rows = sm._rows_fwd_kernel
    ours = []
    sm.softmax_forward(x)
    torch.cuda.synchronize()
    for device_cache in rows.device_caches.values():
        for j, binary in enumerate(device_cache[0].values()):
            ours.append(save_binary(f"rows_{n}_{j}", binary))
    del x
    return {"cols": n, "inductor": kept, "rows_kernel": ours, "compiled": compiled}


def bare_inductor_kernel(n: int, code: str, x_block: int, r0_block: int, subs=(), label: str = "",
                         stride_as_xnumel: bool = False):
    """A forward callable launching Inductor's own kernel for fp32 rows of n from its generated source, as a plain
    triton.jit kernel (its autotuning decorator removed) on our own launch: grid (rows / x_block,), 16 warps, one
    stage, its kept config (stride_as_xnumel: the row stride passed in xnumel's place, for an edit that reads it
    there)."""
    import importlib.util
    import re
    name = "triton_red_fused__softmax_exp_prepare_softmax_online_sub_0"
    quotes = "'" * 3
    source = code.split(f"async_compile.triton('{name}', {quotes}")[1].split(f"{quotes}, device_str")[0]
    source = re.sub(r"@triton_heuristics\.reduction\((.|\n)*?\n\)\n", "", source)
    for old, new in subs:
        old, new = old.format(n=n), new.format(n=n)
        assert old in source, (label, old)
        source = source.replace(old, new)
    path = SAVED / f"bare_{n}{label}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"bare_{n}{label}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, name)

    def run(x):
        y = torch.empty_like(x)
        kernel[(x.shape[0] // x_block,)](x, y, x.stride(0) if stride_as_xnumel else x.shape[0], x.shape[1],
                                         XBLOCK=x_block, R0_BLOCK=r0_block,
                                         num_warps=16, num_stages=1)
        return y
    return run


# Which of the kernel's traits makes it faster (round 85): each a text edit of Inductor's own source.
RUNTIME_SHAPE = [("    xnumel = {rows}\n", ""), ("    r0_numel = {n}\n", ""), ("{n}*x0", "r0_numel*x0")]
RUNTIME_STRIDE = [("    xnumel = {rows}\n", ""), ("{n}*x0", "xnumel*x0")]  # xnumel: the row stride
INT64_ROWS = [("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
               "xindex = (xoffset + tl.arange(0, XBLOCK)[:, None]).to(tl.int64)")]
RUNTIME_MASK = [("    r0_numel = {n}\n", ""), ("tl.range(0, r0_numel, R0_BLOCK)", "tl.range(0, R0_BLOCK, R0_BLOCK)")]
VARIANTS = {  # label: (edits, row stride in xnumel's place)
    "as generated": ([], False),
    "row stride at run time": (RUNTIME_STRIDE, True),
    "int64 row offsets": (INT64_ROWS, False),
    "column mask at run time, one pass": (RUNTIME_MASK, False),
    "shape and stride at run time (its loop at run time too; the first call's)": (RUNTIME_SHAPE, False),
    "all three (a general kernel)": (RUNTIME_STRIDE + INT64_ROWS + RUNTIME_MASK, True),
    "all three, exp and reciprocal as ours": (RUNTIME_STRIDE + INT64_ROWS + RUNTIME_MASK + [
        ("libdevice.exp(tmp5)", "tl.exp(tmp5)"), ("(tmp6 / tmp3)", "tmp6 * (1.0 / tmp3)")], True),
}


def bare(out: list) -> None:
    """Inductor's kernel on our launch against torch.compile, and the dispatcher against both (round 84): ties
    with torch.compile if what puts Inductor ahead is in its kernel, not in how it is launched. Then its traits
    one at a time against the dispatcher (round 85)."""
    from torch._inductor.utils import run_and_get_code
    for n, x_block, r0_block in ((2048, 2, 2048), (4096, 1, 4096)):
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        x = forward_case(n, "float32")[1][0]
        rows = x.shape[0]
        _, codes = run_and_get_code(compiled, x)
        del x
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled,
                  trials=3)
        for i, (label, (subs, stride_as_xnumel)) in enumerate(VARIANTS.items()):
            subs = [(old.replace("{rows}", str(rows)), new) for old, new in subs]
            kernel = bare_inductor_kernel(n, codes[0], x_block, r0_block, subs, f"_{i}", stride_as_xnumel)
            ab_trials(f"Inductor's kernel, {label}, vs the dispatcher", kernel, [(n, "float32")], out, trials=3)


if __name__ == "__main__" and sys.argv[1:] == ["bare"]:
    SAVED.mkdir(parents=True, exist_ok=True)
    warm_up_gpu()
    results = []
    bare(results)
    save_results("probe_inductor_bare.json", results)
elif __name__ == "__main__":
    SAVED.mkdir(parents=True, exist_ok=True)
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    results = []
    for n in (2048, 4096, 8192):
        found = inductor_code(n)
        compiled = found.pop("compiled")
        print(json.dumps(found), flush=True)
        results.append({"probe": "inductor-code", **found})
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], results, baseline=compiled,
                  trials=3)
    save_results("probe_inductor_code.json", results)
