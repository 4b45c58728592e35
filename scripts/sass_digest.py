"""Digests of the sm_90 SASS of the long-row kernels as the table launches them (no GPU), for one version of
kernels/triton_softmax.py: two versions whose digests match compile to the same machine code, so runs of one stand for
the other (notes/kernels.md, rounds 57-59).

    python scripts/sass_digest.py [MODULE_PATH]        # default: the working tree's module
    git show c60f2b1:kernels/triton_softmax.py > /tmp/before.py && python scripts/sass_digest.py /tmp/before.py

One line per configuration: the tile kernel (aligned unrolled 4x and 2x, odd rows with vector edges, with and without
the edges apart), tile-stream (aligned, odd) and the backward's stream kernel (aligned, odd), in fp16, bf16 and fp32
(the backward in fp16 and fp32). Uses Triton's bundled ptxas and cuobjdump; the digests depend on Triton's version.
"""
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
HOPPER = GPUTarget("cuda", 90, 32)


def load_module(path: str, name: str = "softmax_under_digest"):
    """The module at path (a version of a kernels/ module), imported under name."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cuobjdump(kernel, *flags: str) -> str:
    """What Triton's cuobjdump prints for a compiled kernel's cubin under flags (-sass, -res-usage)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        return subprocess.run([str(CUOBJDUMP), *flags, cubin.name], capture_output=True, text=True, check=True).stdout


def sass_digest(kernel) -> str:
    """12 hex digits of the SASS text of a compiled kernel (instructions only: no names, paths or line numbers)."""
    text = cuobjdump(kernel, "-sass")
    instructions = "\n".join(line for line in text.split("\n") if "/*" in line and "Function" not in line)
    return hashlib.sha1(instructions.encode()).hexdigest()[:12]


def divisible(indices) -> dict:
    """attrs saying the arguments at indices are multiples of 16, as Triton specialises 16-byte bases and strides."""
    return {(i,): [["tt.divisibility", 16]] for i in indices}


def compiled(fn, signature: dict, constexprs: dict, attrs: dict, **options):
    """fn compiled for sm_90 with the arguments typed by signature and its other constexprs at their defaults (so
    that a version without a later knob compiles alike)."""
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and p.name not in constexprs}
    constexprs = {**defaults, **constexprs}
    signature = {**signature, **dict.fromkeys(constexprs, "constexpr")}
    return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs), target=HOPPER,
                          options=options)


def forward_lines(sm, dtype: str) -> list:
    """(name, digest) of the tile and tile-stream configurations the table launches for dtype."""
    vec = 4 if dtype == "fp32" else 8
    common = dict(VEC=vec, LOG2=dtype == "fp16", GUARD=dtype == "bf16")
    tile_signature = {"output_ptr": "*" + dtype, "input_ptr": "*" + dtype, "input_row_stride": "i32",
                      "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"}
    lines = []
    for align, vector_edges, edges_apart, unroll in ((vec, False, False, 4), (vec, False, False, 2),
                                                     (1, True, True, 2), (1, True, False, 2)):
        constexprs = dict(common, TILE_ROWS=2048, ALIGN=align, UNROLL=unroll, VECTOR_EDGES=vector_edges,
                          EDGES_APART=edges_apart)
        kernel = compiled(sm._tile_online_fwd_kernel, tile_signature, constexprs, divisible((0, 1)), num_warps=32,
                          maxnreg=64)
        lines.append((f"tile {dtype} align {align} unroll {unroll}{' vector edges' * vector_edges}"
                      f"{' edges apart' * edges_apart}", sass_digest(kernel)))
    stream_signature = {"output_ptr": "*" + dtype, "input_ptr": "*" + dtype, "slots_ptr": "*i64",
                        "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32",
                        "n_segments": "i32", "blocks_per_segment": "i32", "max_polls": "i32"}
    for align in (vec, 1):
        constexprs = dict(common, TILE_ROWS=2048, SEGMENTS_BLOCK=16 if dtype == "fp32" else 1024, ALIGN=align,
                          UNROLL=1, PREFETCH=1, LINE=True, POLL_SLEEP=0, WAIT_PREFETCH=1, VECTOR_EDGES=align < vec)
        bases = (0, 1, 2, 3, 4, 6) if align == vec else (0, 1, 2)
        kernel = compiled(sm._tile_stream_fwd_kernel, stream_signature, constexprs, divisible(bases), num_warps=32,
                          maxnreg=64)
        lines.append((f"tile-stream {dtype} align {align}", sass_digest(kernel)))
    return lines


def backward_lines(sm, dtype: str) -> list:
    """(name, digest) of the backward stream configurations the table launches for dtype."""
    vec = 4 if dtype == "fp32" else 8
    signature = {"grad_input_ptr": "*" + dtype, "output_ptr": "*" + dtype, "grad_output_ptr": "*" + dtype,
                 "slots_ptr": "*i64", "grad_input_row_stride": "i32", "output_row_stride": "i32",
                 "grad_output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "n_segments": "i32",
                 "blocks_per_segment": "i32", "max_polls": "i32"}
    options = dict(num_warps=32, **({"maxnreg": 64} if dtype != "fp32" else {}))
    lines = []
    for align in (vec, 1):
        constexprs = dict(BLOCK_SIZE=8192 if dtype == "fp32" else 16384, SEGMENTS_BLOCK=16 if dtype == "fp32" else 32,
                          ALIGN=align, VEC=vec, NUM_STAGES=1, LINE=align < vec, POLL_SLEEP=0)
        kernel = compiled(sm._stream_bwd_kernel, signature, constexprs,
                          divisible((0, 1, 2, 3, 4, 5, 6, 8) if align == vec else (0, 1, 2, 3)), **options)
        lines.append((f"stream backward {dtype} align {align}", sass_digest(kernel)))
    return lines


def main() -> None:
    """Print a digest line per configuration."""
    path = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent / "kernels" /
                                                     "triton_softmax.py")
    sm = load_module(path)
    print(f"# {path}, Triton {triton.__version__}")
    lines = [line for dtype in ("fp16", "bf16", "fp32") for line in forward_lines(sm, dtype)]
    lines += [line for dtype in ("fp16", "fp32") for line in backward_lines(sm, dtype)]
    for name, digest in lines:
        print(f"{digest}  {name}")


if __name__ == "__main__":
    main()
