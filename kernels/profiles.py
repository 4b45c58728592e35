"""The registry of named run profiles that experiments refer to.

A profile names one implementation of row softmax over the last dim of a 2-D tensor, plus
(where it has one) the kernel that computes its backward. Implementations are named as
"module:function" strings and imported only when a run needs them, so this file stays
importable without torch.
"""
import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """One named implementation that an experiment can run."""

    id: str
    title: str
    summary: str
    family: str  # "triton" or "pytorch": who wrote the kernel that runs
    forward: str  # "module:function", (x) -> softmax(x, dim=-1) for 2-D x
    backward: str | None = None  # "module:function", (y, dy) -> dx

    @property
    def source_module(self) -> str:
        """The module that holds this profile's implementation."""
        return self.forward.split(":")[0]

    def forward_fn(self):
        """Import and return the forward callable."""
        return _resolve(self.forward)

    def backward_fn(self):
        """Import and return the backward callable, or None."""
        return _resolve(self.backward) if self.backward else None


def _resolve(target: str):
    """Import "module:function" and return the function."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


_TRITON = "kernels.triton_softmax"
_TORCH = "kernels.torch_softmax"

PROFILES: dict[str, Profile] = {
    p.id: p
    for p in [
        Profile(
            "torch-baseline", "PyTorch softmax baseline",
            "torch.softmax(x, dim=-1), PyTorch's own CUDA kernel.",
            "pytorch", f"{_TORCH}:torch_softmax", f"{_TORCH}:torch_softmax_backward",
        ),
        Profile(
            "torch-naive", "Naive 5-op PyTorch softmax",
            "max, subtract, exp, sum, divide: five kernels and four intermediate tensors (seed 001).",
            "pytorch", f"{_TORCH}:naive_softmax",
        ),
        Profile(
            "torch-compile", "torch.compile softmax",
            "torch.compile of softmax: Inductor generates a fused Triton kernel.",
            "pytorch", f"{_TORCH}:compiled_softmax",
        ),
        Profile(
            "triton-fused-row-softmax", "Triton fused row softmax",
            "The project's kernel, kernels.softmax: it dispatches per shape from one heuristics table.",
            "triton", f"{_TRITON}:softmax_forward", f"{_TRITON}:softmax_backward",
        ),
        Profile(
            "triton-single-block", "Triton single-block softmax",
            "One program per row, whole row in registers, calculate_settings heuristic (seeds 001, 003).",
            "triton", f"{_TRITON}:single_block_forward", f"{_TRITON}:single_block_backward",
        ),
        Profile(
            "triton-single-block-cached", "Triton single-block softmax with cache modifiers",
            "The single-block kernel with .ca loads and .cs stores (seed 003).",
            "triton", f"{_TRITON}:single_block_cached_forward",
        ),
        Profile(
            "triton-online", "Triton online multi-block softmax",
            "Online softmax: one pass for running max and sum, one to write; fixed block (seed 003).",
            "triton", f"{_TRITON}:online_forward", f"{_TRITON}:online_backward",
        ),
        Profile(
            "triton-exchange", "Triton one-pass split-row softmax",
            "Chunks of a row held in registers by a persistent grid; (max, sum) partials exchanged "
            "through global memory, so x is read once. The dispatcher uses it for fp32 rows of 32k-128k.",
            "triton", f"{_TRITON}:exchange_forward", f"{_TRITON}:exchange_backward",
        ),
        Profile(
            "triton-online-autotuned", "Triton online softmax, autotuned",
            "The online kernel under triton.autotune over block size and warps, keyed on n_cols (seed 003).",
            "triton", f"{_TRITON}:online_autotuned_forward",
        ),
    ]
}


def get_profile(profile_id: str) -> Profile:
    """Return the profile with this id, or raise KeyError naming the known ids."""
    try:
        return PROFILES[profile_id]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise KeyError(f"unknown profile {profile_id!r}; known profiles: {known}") from None
