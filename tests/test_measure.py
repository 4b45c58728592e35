"""The CPU-side parts of measuring: planning, statistics, the correctness check and its references."""
import pytest

from kernellab import measure
from kernellab.content import load_experiment
from labfixtures import REPO

torch = pytest.importorskip("torch")


def experiments(*slugs):
    """Experiments loaded from site_src/ by slug."""
    return {s: load_experiment(REPO / "site_src" / "experiments" / f"{s}.yaml") for s in slugs}


def test_plan_expands_and_narrows():
    exps = experiments("row-softmax-fusion", "backward-pass")
    everything = measure.plan(exps)
    assert len([i for i in everything if i.experiment == "row-softmax-fusion"]) == 1 * 4 * 2
    assert {i.pass_ for i in everything if i.experiment == "backward-pass"} == {"backward"}
    narrowed = measure.plan(exps, ["row-softmax-fusion"], ["float16"], ["torch-baseline"], (8, 3000))
    assert [(i.case, i.rows, i.cols, i.profile, i.dtype) for i in narrowed] == [
        ("custom-8x3000", 8, 3000, "torch-baseline", "float16")]


def test_profiles_without_a_backward_are_not_planned_for_the_backward_pass():
    exps = experiments("backward-pass")
    exps["backward-pass"]["profiles"].append("torch-naive")
    assert not [i for i in measure.plan(exps) if i.profile == "torch-naive"]


def test_timing_stats_keeps_every_sample_and_orders_quantiles():
    samples = [0.5, 0.1, 0.3, 0.2, 0.4]
    t = measure.timing_stats(samples)
    assert t["median_ms"] == 0.3 and t["min_ms"] == 0.1 and t["max_ms"] == 0.5
    assert t["p20_ms"] <= t["median_ms"] <= t["p80_ms"]
    assert t["samples_ms"] == samples and t["n_samples"] == 5


def seeded() -> torch.Generator:
    """A generator with a fixed seed: the same inputs on every run, so no test passes by luck."""
    return torch.Generator().manual_seed(0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_check_accepts_correct_rounding_and_rejects_wrong_values(dtype):
    x = torch.randn(64, 300, dtype=torch.float64, generator=seeded()) * 3
    ref = torch.softmax(x, dim=-1)
    good = ref.to(getattr(torch, dtype))
    assert measure.check(good, ref, dtype)["passed"]
    bad = good.clone()
    # 10% off the largest probability: far past any tolerance (a tiny entry, scaled, could stay within it)
    bad.view(-1)[ref.argmax()] *= 1.1
    result = measure.check(bad, ref, dtype)
    assert not result["passed"] and result["max_abs_err"] > 0
    nan = good.clone()
    nan[0, 0] = float("nan")
    assert not measure.check(nan, ref, dtype)["passed"]
    assert not measure.check(good[:, :-1], ref, dtype)["passed"]
    assert not measure.check(good.double(), ref, dtype)["passed"]


def test_check_covers_every_row_across_chunks(monkeypatch):
    monkeypatch.setattr(measure, "CHECK_CHUNK_ELEMENTS", 1000)
    ref = torch.softmax(torch.randn(50, 300, dtype=torch.float64, generator=seeded()), dim=-1)
    out = ref.float()
    out[-1, -1] += 0.01  # the last element of the last chunk
    assert not measure.check(out, ref, "float32")["passed"]


def test_gradient_reference_and_its_cancellation_scale():
    generator = seeded()
    y = torch.softmax(torch.randn(4, 100, dtype=torch.float64, generator=generator), dim=-1).half()
    dy = torch.randn(4, 100, generator=generator).half()
    dx, scale = measure.softmax_grad_reference(y, dy)
    y64, dy64 = y.double(), dy.double()
    expected = y64 * dy64 - y64 * (y64 * dy64).sum(-1, keepdim=True)
    assert torch.allclose(dx, expected)
    assert bool((scale >= dx.abs() - 1e-12).all())
    # An fp16 result that rounds y*dy and y*s separately is within the scaled tolerance...
    s = (y64 * dy64).sum(-1, keepdim=True)
    two_roundings = ((y64 * dy64).half().double() - (y64 * s).half().double()).half()
    assert measure.check(two_roundings, dx, "float16", scale)["passed"]
    # ...but a wrong gradient is not.
    assert not measure.check((dx * 1.05).half(), dx, "float16", scale)["passed"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_naive_low_precision_softmax_passes_but_a_wrong_one_does_not(dtype):
    from kernels.torch_softmax import naive_softmax

    x = (torch.randn(16, 2000, generator=seeded()) * 2).to(getattr(torch, dtype))
    ref, scale = measure.softmax_reference(x)
    assert measure.check(naive_softmax(x), ref, dtype, scale)["passed"]
    shifted = torch.roll(naive_softmax(x), 1, dims=-1)  # an off-by-one column index
    assert not measure.check(shifted, ref, dtype, scale)["passed"]


NCU_CSV = '''==PROF== Connected to process 4242
"ID","Process ID","Kernel Name","dram__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"
"","","","%","register/thread","%","inst","inst","inst","inst"
"0","4242","_rows_fwd_kernel","91.5","32","84.25","6.5","0.25","1,234.5","0.75"
==PROF== Disconnected from process 4242
'''


def test_ncu_csv_gives_per_kernel_facts_and_top_stalls():
    [k] = measure.parse_ncu_csv(NCU_CSV)
    assert k["kernel"] == "_rows_fwd_kernel"
    assert (k["dram_throughput_pct"], k["achieved_occupancy_pct"], k["registers"]) == (91.5, 84.25, 32.0)
    assert [s["reason"] for s in k["top_stalls"]] == ["math_pipe_throttle", "long_scoreboard", "wait"]
    with pytest.raises(ValueError):
        measure.parse_ncu_csv("==PROF== no kernels\n")


def test_ncu_command_profiles_one_call_in_a_child_process():
    item = measure.WorkItem("e", "c", 8, 300, "triton-fused-row-softmax", "float16", "forward")
    command = measure.ncu_command(item)
    assert command[:3] == ["ncu", "--profile-from-start", "off"]
    assert command[command.index("-m") + 1] == "kernellab.profile_one"
    assert "--clock-control" in command and command[command.index("--clock-control") + 1] == "none"
