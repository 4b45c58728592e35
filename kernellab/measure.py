"""Run experiment profiles on a CUDA GPU: check correctness, then time, then store one artifact.

Everything torch-related is imported inside functions so that the site build never needs it.
"""
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kernellab import artifacts, source, stats
from kernellab.errors import BuildError
from kernels.profiles import get_profile

# Per-dtype tolerance on |out - ref| <= atol + rtol * |ref| against a float64 reference.
# rtol is about two units in the last place of the output dtype: the kernels accumulate in
# fp32, so only the final rounding (and fp16/bf16 intermediates of the naive baseline) show.
# fp32 allows 1e-5 for fast exp2 approximations and long reductions (N up to 1M).
# atol only covers numbers too small for rtol to mean anything: fp16's subnormal spacing
# (2^-24; long rows have outputs near 1e-6, below fp16's smallest normal) and values that
# underflow to zero in bf16/fp32. It must stay tiny, because softmax outputs of long rows are tiny.
TOLERANCES = {"float16": (2.0**-24, 2e-3), "bfloat16": (1e-30, 1.6e-2), "float32": (1e-30, 1e-5)}
BYTES_PER_ELEMENT = {"float16": 2, "bfloat16": 2, "float32": 4}
# Tensors read plus written per element: forward reads x, writes y; backward reads y, dy, writes dx.
TENSORS_MOVED = {"forward": 2, "backward": 3}
WARMUP_MS, REP_MS, SEED = 25, 100, 20261121
COPY_BYTES = 1 << 30  # 1 GiB copied: far larger than any L2, so this is the HBM ceiling
CHECK_CHUNK_ELEMENTS = 1 << 26  # rows are checked in chunks to bound float64 memory


@dataclass(frozen=True)
class WorkItem:
    """One timed measurement: an experiment's case x profile x dtype x pass."""

    experiment: str
    case: str
    rows: int
    cols: int
    profile: str
    dtype: str
    pass_: str

    def label(self) -> str:
        """Short text for the progress display."""
        return f"{self.experiment} {self.case} {self.profile} {self.dtype} {self.pass_}"


def plan(experiments: dict, only_experiments=(), only_dtypes=(), only_profiles=(), custom_case=None) -> list:
    """Expand experiments into work items, narrowed by the command-line filters."""
    items = []
    for slug, exp in experiments.items():
        if only_experiments and slug not in only_experiments:
            continue
        cases = [(c["id"], c["rows"], c["cols"]) for c in exp["cases"]]
        if custom_case:
            rows, cols = custom_case
            cases = [(f"custom-{rows}x{cols}", rows, cols)]
        for case_id, rows, cols in cases:
            for profile_id in exp["profiles"]:
                if only_profiles and profile_id not in only_profiles:
                    continue
                profile = get_profile(profile_id)
                for dtype in exp["dtypes"]:
                    if only_dtypes and dtype not in only_dtypes:
                        continue
                    for pass_ in exp["passes"]:
                        if pass_ == "backward" and profile.backward is None:
                            continue
                        items.append(WorkItem(slug, case_id, rows, cols, profile_id, dtype, pass_))
    return items


def utc_now() -> datetime.datetime:
    """The current time in UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def iso(t: datetime.datetime) -> str:
    """ISO 8601 with a Z."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(root) -> dict:
    """The artifact's git block: git_state, and the digest of the kernels/ the run imports (source.kernels_digest)."""
    return dict(git_state(root), kernels_sha256=source.kernels_digest(Path(root) / "kernels"))


def git_state(root) -> dict:
    """The commit and dirty flag, from KERNEL_LAB_GIT_COMMIT/_DIRTY if set, else from git."""
    commit = os.environ.get("KERNEL_LAB_GIT_COMMIT")
    dirty_env = os.environ.get("KERNEL_LAB_GIT_DIRTY")
    dirty = None if dirty_env is None else dirty_env.strip().lower() in ("1", "true", "yes")
    if commit:
        return {"commit": commit, "dirty": dirty}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!runs", ":!public"],
                                cwd=root, capture_output=True, text=True, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": dirty}


def driver_version():
    """The NVIDIA driver version from nvidia-smi, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return out.strip().splitlines()[0] or None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def environment() -> dict:
    """The GPU and software this run measures."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "device": {
            "name": props.name,
            "sm_count": props.multi_processor_count,
            "memory_bytes": props.total_memory,
            "l2_bytes": getattr(props, "L2_cache_size", None),
            "capability": f"{props.major}.{props.minor}",
        },
        "driver": driver_version(),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def timing_stats(samples_ms: list) -> dict:
    """Median, p20, p80, min, max and every sample (rounded to 1 ns)."""
    ordered = sorted(samples_ms)
    n = len(ordered)

    def quantile(q):
        return ordered[min(n - 1, int(q * (n - 1) + 0.5))]

    return {
        "median_ms": round(stats.median(ordered), 6), "p20_ms": round(quantile(0.2), 6), "p80_ms": round(quantile(0.8), 6),
        "min_ms": round(ordered[0], 6), "max_ms": round(ordered[-1], 6), "n_samples": n,
        "samples_ms": [round(t, 6) for t in samples_ms],
    }


def bench(fn) -> dict:
    """Time fn with triton's do_bench: warm-up, L2 flushed before every sample, all samples kept."""
    import triton.testing

    return timing_stats(triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="all"))


def ceiling(n_inputs: int) -> dict:
    """Bandwidth of the simplest kernel with n_inputs reads and one write of 1 GiB each.

    One input: a device-to-device copy, the forward's ceiling (read x, write y).
    Two inputs: torch.add(a, b, out=c), the backward's ceiling (read y and dy, write dx).
    """
    import torch

    inputs = [torch.randn(COPY_BYTES // 4, device="cuda") for _ in range(n_inputs)]
    out = torch.empty_like(inputs[0])
    op = (lambda: out.copy_(inputs[0])) if n_inputs == 1 else (lambda: torch.add(*inputs, out=out))
    timing = bench(op)
    moved = (n_inputs + 1) * COPY_BYTES
    return {"bytes_moved": moved, "gbs": round(moved / (timing["median_ms"] * 1e6), 3), "timing": timing}


def warm_up_gpu(seconds: float = 1.0) -> None:
    """Keep the GPU busy for a moment so clocks have left their idle state before anything is timed."""
    import torch

    a = torch.randn(1 << 26, device="cuda")
    b = torch.empty_like(a)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(20):
            b.copy_(a)
        torch.cuda.synchronize()
    del a, b
    torch.cuda.empty_cache()


def capture_graph(fn, args):
    """A CUDA graph holding one call of fn(*args), or None if the call cannot be captured.

    Timing graph replays keeps Python launch overhead out of the kernel time: for kernels of
    ~10 us a slow host can otherwise leave the GPU idle inside the timed region.
    """
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(*args)  # compilation, autotuning and allocations happen outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn(*args)
    except Exception:  # not capturable (host sync, dynamic allocation): time direct calls instead
        torch.cuda.synchronize()
        return None
    return graph


def check(out, ref, dtype: str, scale=None) -> dict:
    """Compare every element with the float64 reference, chunk by chunk of rows.

    Passes where |out - ref| <= atol + rtol * max(|ref|, scale); scale (optional, same shape)
    is the size of the terms the exact formula subtracts, where cancellation makes |ref| small.
    """
    import torch

    atol, rtol = TOLERANCES[dtype]
    if out.shape != ref.shape or out.dtype != getattr(torch, dtype):
        return {"passed": False, "max_abs_err": None, "atol": atol, "rtol": rtol, "n_checked": 0,
                "reference": f"shape/dtype mismatch: got {tuple(out.shape)} {out.dtype}"}
    rows_per_chunk = max(1, CHECK_CHUNK_ELEMENTS // max(1, ref.shape[-1]))
    passed, max_err, worst = True, 0.0, None
    for start in range(0, ref.shape[0], rows_per_chunk):
        o = out[start:start + rows_per_chunk].double()
        r = ref[start:start + rows_per_chunk]
        diff = (o - r).abs()
        magnitude = r.abs() if scale is None else torch.maximum(r.abs(), scale[start:start + rows_per_chunk])
        tolerance = atol + rtol * magnitude
        # NaN anywhere fails: NaN <= tol is False.
        passed &= bool((diff <= tolerance).all())
        if diff.numel():
            max_err = max(max_err, float(diff.nan_to_num(nan=float("inf")).max()))
            ratio = (diff / tolerance).nan_to_num(nan=float("inf"))
            flat = int(ratio.argmax())
            if worst is None or float(ratio.flatten()[flat]) > worst["ratio"]:
                row, col = divmod(flat, ref.shape[-1])
                worst = {"ratio": float(ratio.flatten()[flat]), "row": start + row, "col": col,
                         "out": float(o.flatten()[flat]), "ref": float(r.flatten()[flat]),
                         "tolerance": float(tolerance.flatten()[flat])}
    finite = max_err != float("inf")
    result = {"passed": passed, "max_abs_err": max_err if finite else None, "atol": atol, "rtol": rtol,
              "n_checked": ref.numel(), "reference": "torch float64 on the same input"}
    if worst is not None:
        # JSON has no inf/NaN: write them as text
        result["worst"] = {k: (v if v == v and abs(v) != float("inf") else str(v)) for k, v in worst.items()}
    return result


def softmax_reference(x) -> tuple:
    """Float64 softmax of x, and the scale its rounding error may reach in a correct implementation.

    exp amplifies a relative error in its argument z = x - max by |z|: computing z in fp16 or
    bf16 (as the naive 5-op softmax does) costs up to |z| ulps. So the tolerance is relative to
    |y| * (1 + |z|), which still fails any wrong index, missing element or overflow by far.
    """
    import torch

    x64 = x.double()
    z = x64 - x64.max(dim=-1, keepdim=True).values
    y64 = torch.softmax(x64, dim=-1)
    return y64, y64 * (1 + z.abs())


def softmax_grad_reference(y, dy) -> tuple:
    """Float64 dx = y * (dy - s), s = sum(y * dy), for the y the kernel sees, and the scale of its terms.

    dx subtracts y*s from y*dy, and s itself sums terms of both signs. Where those cancel, any
    finite-precision implementation errs relative to the terms, not to the small result: by about
    eps * |y| * (|dy| + sum|y * dy|). That is the scale the tolerance uses.
    """
    y64, dy64 = y.double(), dy.double()
    terms = y64 * dy64
    s = terms.sum(dim=-1, keepdim=True)
    return y64 * (dy64 - s), y64.abs() * (dy64.abs() + terms.abs().sum(dim=-1, keepdim=True))


def random_input(rows: int, cols: int, dtype: str, seed: int):
    """Fresh normal data (never zeros), scaled so exp() sees a realistic spread."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(rows, cols, device="cuda", generator=gen) * 2.0).to(getattr(torch, dtype))


def measure_item(item: WorkItem, seed: int, ceiling_gbs) -> dict:
    """Check then time one work item; never raises for a kernel's own failure."""
    import torch

    profile = get_profile(item.profile)
    element_bytes = BYTES_PER_ELEMENT[item.dtype]
    result = {
        "experiment": item.experiment, "case": item.case, "profile": item.profile, "dtype": item.dtype,
        "shape": [item.rows, item.cols], "pass": item.pass_, "status": "error", "error": None,
        "correctness": None, "timing": None,
        "bytes_moved": TENSORS_MOVED[item.pass_] * item.rows * item.cols * element_bytes,
        "gbs": None, "copy_share": None,
    }
    try:
        x = random_input(item.rows, item.cols, item.dtype, seed)
        if item.pass_ == "forward":
            fn = profile.forward_fn()
            args = (x,)
            expected, scale = softmax_reference(x)
        else:
            fn = profile.backward_fn()
            y = torch.softmax(x.float(), dim=-1).to(x.dtype)
            dy = random_input(item.rows, item.cols, item.dtype, seed + 1)
            args = (y, dy)
            # The kernel sees y rounded to its dtype; the reference uses that same y.
            expected, scale = softmax_grad_reference(y, dy)
        torch.cuda.synchronize()
        first_call = time.perf_counter()
        out = fn(*args)
        torch.cuda.synchronize()
        # The first call pays for compilation and autotuning: the cost a user sees once per shape.
        result["first_call_ms"] = round((time.perf_counter() - first_call) * 1e3, 3)
        result["correctness"] = check(out, expected, item.dtype, scale)
        del out, expected, scale
        if not result["correctness"]["passed"]:
            result["status"] = "failed"
            return result
        graph = capture_graph(fn, args)
        result["cuda_graph"] = graph is not None
        result["timing"] = bench(graph.replay if graph is not None else (lambda: fn(*args)))
        del graph
        result["status"] = "ok"
        seconds = result["timing"]["median_ms"] / 1e3
        result["gbs"] = round(result["bytes_moved"] / seconds / 1e9, 3)
        if ceiling_gbs:
            result["copy_share"] = round(result["gbs"] / ceiling_gbs, 5)
        facts = compile_facts(profile, item.pass_, args)
        if facts:
            result["compile"] = facts
    except Exception as exc:  # a broken kernel is a recorded result, not a crashed run
        result["status"] = "error"
        result["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:500]
    finally:
        torch.cuda.empty_cache()
    return result


def compile_facts(profile, pass_: str, args) -> list:
    """Registers, spills and launch settings of the Triton kernels a profile's pass launches, if known."""
    if profile.family != "triton":
        return []
    import importlib

    target = profile.forward if pass_ == "forward" else profile.backward
    module_name, _, function = target.partition(":")
    facts = getattr(importlib.import_module(module_name), "compile_facts", None)
    if facts is None:
        return []
    try:
        # the module's compile_facts takes the function and an input of the measured shape and dtype
        return facts(function, args[0])
    except Exception:  # facts are a bonus; a failure to read them must not fail the result
        return []


# Nsight Compute metrics read per kernel with --with-profiling.
NCU_METRICS = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "launch__registers_per_thread": "registers",
}


def ncu_command(item: WorkItem) -> list:
    """The ncu command line that profiles one call of a work item in a child process."""
    return ["ncu", "--profile-from-start", "off", "--clock-control", "none", "--target-processes", "all",
            "--csv", "--page", "raw", "--section", "WarpStateStats", "--metrics", ",".join(NCU_METRICS),
            sys.executable, "-m", "kernellab.profile_one", "--profile", item.profile, "--pass", item.pass_,
            "--rows", str(item.rows), "--cols", str(item.cols), "--dtype", item.dtype]


def parse_ncu_csv(text: str) -> list:
    """Per-kernel DRAM throughput, achieved occupancy, registers and top three stall reasons."""
    import csv

    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        raise ValueError("ncu printed no kernel rows")
    header, kernels = rows[0], rows[2:]  # rows[1] holds the units
    out = []
    for values in kernels:
        record = dict(zip(header, values))

        def number(name):
            try:
                return float(record.get(name, "").replace(",", ""))
            except ValueError:
                return None

        stalls = [(name.split("issue_stalled_")[1].split("_per_")[0].split(".")[0], number(name))
                  for name in header if "warps_issue_stalled_" in name and name.endswith("_per_issue_active.ratio")]
        stalls = sorted((s for s in stalls if s[1] is not None), key=lambda s: -s[1])[:3]
        facts = {"kernel": record.get("Kernel Name", "?")}
        facts.update({short: number(metric) for metric, short in NCU_METRICS.items()})
        facts["top_stalls"] = [{"reason": reason, "warps_per_issue": round(value, 3)} for reason, value in stalls]
        out.append(facts)
    return out


def profile_with_ncu(item: WorkItem) -> dict:
    """{"tool", "kernels"} from Nsight Compute for one call, or {"tool", "error"}."""
    import shutil

    tool = "Nsight Compute (ncu --clock-control none, WarpStateStats)"
    if not shutil.which("ncu"):
        return {"tool": tool, "error": "ncu is not on PATH"}
    try:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where kernellab imports from
        done = subprocess.run(ncu_command(item), capture_output=True, text=True, timeout=300, cwd=repo)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return {"tool": tool, "error": f"ncu exited {done.returncode}: {tail[0][:300]}"}
        return {"tool": tool, "kernels": parse_ncu_csv(done.stdout)}
    except (subprocess.SubprocessError, ValueError, OSError) as exc:
        return {"tool": tool, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def require_gpu() -> None:
    """Raise BuildError unless torch with a CUDA GPU is available."""
    try:
        import torch
    except ImportError:
        raise BuildError("build.py --run", "needs torch and triton: pip install -e '.[run]'") from None
    if not torch.cuda.is_available():
        raise BuildError("build.py --run", "needs a CUDA GPU, and torch.cuda.is_available() is False "
                         "here. Nothing was written to runs/. To render the site from the stored runs, "
                         "run: python build.py")


def run_id_for(start: datetime.datetime, device_name: str) -> str:
    """A readable, unique-per-second id: UTC start and the device."""
    import re

    device = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    return f"{start:%Y%m%dT%H%M%SZ}-{device}"


def run(items: list, root, argv: list, progress=sys.stderr, with_profiling: bool = False) -> dict:
    """Measure every work item on this GPU and return the artifact dict (not yet written).

    with_profiling: also profile each correct Triton result once under Nsight Compute.
    """
    import torch

    require_gpu()
    torch.backends.cuda.matmul.allow_tf32 = False
    start = utc_now()
    env = environment()
    print(f"kernel-lab: measuring on {env['device']['name']} ({len(items)} results to take)", file=progress)
    warm_up_gpu()
    copy, three = ceiling(1), ceiling(2)
    torch.cuda.empty_cache()  # hand the ceilings' 3 GiB back before the kernels' inputs
    ceilings = {"forward": copy["gbs"], "backward": three["gbs"]}
    print(f"  copy bandwidth: {copy['gbs']:.0f} GB/s; two reads + one write: {three['gbs']:.0f} GB/s", file=progress)
    results = []
    t0 = time.monotonic()
    for i, item in enumerate(items, 1):
        print(f"[{i}/{len(items)}] {item.label()} ...", end="", file=progress, flush=True)
        r = measure_item(item, SEED + 1000 * i, ceilings[item.pass_])
        if with_profiling and r["status"] == "ok" and get_profile(item.profile).family == "triton":
            r["profiling"] = profile_with_ncu(item)
        results.append(r)
        if r["status"] == "ok":
            t = r["timing"]
            print(f" {t['median_ms']:.4f} ms  {r['gbs']:.0f} GB/s  {100 * (r['copy_share'] or 0):.1f}% of copy"
                  f"  ({time.monotonic() - t0:.0f}s)", file=progress)
        else:
            print(f" {r['status'].upper()}: {r['error'] or 'correctness check failed'}", file=progress)
    command = shlex.join([os.path.basename(sys.executable), *argv])
    return {
        "schema_version": artifacts.SCHEMA_VERSION,
        "run_id": run_id_for(start, env["device"]["name"]),
        "origin": "measured",
        "started_utc": iso(start),
        "finished_utc": iso(utc_now()),
        "command": command,
        "git": provenance(root),
        "environment": env,
        "settings": {"timer": "triton.testing.do_bench (CUDA events) over CUDA-graph replays of one call",
                     "warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "l2_flushed": True, "seed": SEED},
        "copy_bandwidth": copy,
        "three_tensor_bandwidth": three,
        "results": results,
    }
