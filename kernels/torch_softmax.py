"""PyTorch baselines for row softmax: the library op, the 5-op naive version, and torch.compile."""
import functools

import torch


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax over the last dim: the baseline every claim is measured against."""
    return torch.softmax(x, dim=-1)


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """The 5-op softmax of the Triton tutorial (seed 001), one kernel per line."""
    # read  MN elements ; write M  elements
    x_max = x.max(dim=-1)[0]
    # read MN + M elements ; write MN elements
    z = x - x_max[:, None]
    # read  MN elements ; write MN elements
    numerator = torch.exp(z)
    # read  MN elements ; write M  elements
    denominator = numerator.sum(dim=-1)
    # read MN + M elements ; write MN elements
    return numerator / denominator[:, None]
    # in total: read 5MN + 2M elements ; wrote 3MN + 2M elements


@functools.cache
def _compiled_softmax():
    """Compile torch.softmax once per process."""
    # One compiled function sees many shapes and dtypes in a sweep; past the recompile
    # limit dynamo silently runs eager, which would be measured under the compile label.
    torch._dynamo.config.recompile_limit = 1024
    torch._dynamo.config.accumulated_recompile_limit = 4096
    return torch.compile(lambda x: torch.softmax(x, dim=-1), dynamic=False)


def compiled_softmax(x: torch.Tensor) -> torch.Tensor:
    """torch.compile of softmax over the last dim (Inductor's generated Triton kernel)."""
    return _compiled_softmax()(x)


def torch_softmax_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The kernel torch autograd runs for softmax's backward: dx = y * (dy - sum(y * dy))."""
    return torch._softmax_backward_data(dy, y, -1, y.dtype)
