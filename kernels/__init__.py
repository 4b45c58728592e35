"""Row softmax kernels: the project's Triton kernels, the PyTorch baselines, and the profile registry.

`from kernels import softmax` gives the Triton drop-in for `torch.softmax`. The registry is
importable without torch so the site can be built on machines that have no GPU stack.
"""
from kernels.profiles import PROFILES, Profile, get_profile

__all__ = ["PROFILES", "Profile", "get_profile", "softmax"]


def __getattr__(name):
    """Import the Triton softmax lazily, so `import kernels` does not pull in torch."""
    if name == "softmax":
        from kernels.triton_softmax import softmax

        return softmax
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
