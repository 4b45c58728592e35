"""Compile a tma-stream kernel (kernels/gluon_softmax.py) for sm_90 without a GPU, and print its resource use as JSON.

Registers, stack and local memory (spills), shared memory, and counts in its SASS: instructions, TMA loads
(UTMALDG), 16-byte stores (STG.E.128) and exp2s (MUFU.EX2). Triton's own ptxas and cuobjdump do the work, so any
machine with triton installed can check a launch before device time is spent on it; run it outside the interpreter
(TRITON_INTERPRET unset). tests/test_gluon_softmax.py checks the table's launches with it; the notes' "offline
(sm_90, Triton 3.6)" figures come from it with the GPU image's Triton on PYTHONPATH.

    python scripts/compile_tma.py forward bf16 --programs 4 --warps 4 --vectors 4 --slots 6 --tile-loop --loose
    python scripts/compile_tma.py backward fp32 --programs 1 --warps 8 --vectors 4 --slots 7 --maxnreg 128
    python scripts/compile_tma.py backward fp32 --programs 1 --warps 8 --vectors 4 --slots 7 --register-tiles 2
    python scripts/compile_tma.py backward fp32 --programs 1 --warps 4 --vectors 4 --slots 7 --lag
    python scripts/compile_tma.py forward bf16 --programs 6 --warps 4 --vectors 4 --slots 2 --lag
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def facts(op: str, dtype: str, programs: int, warps: int, vectors: int, slots: int, loose: bool = False,
          tile_loop: bool = False, aligned: bool = False, maxnreg: int = 0, segments_block: int = 0,
          part_rows: int = 0, dynamic: bool = False, prefetch_next: bool = False, register_tiles: int = 0,
          poll_sleep: int = 0, extra: dict | None = None, lag: bool = False, tma_store: bool = False,
          rows_dynamic: bool = False) -> dict:
    """Resource use of one tma-stream launch compiled for sm_90 (slots: tiles of each tensor a program holds;
    maxnreg 0: the launch's own cap, gluon_softmax._register_share; segments_block 0: 32 for one program an SM, else
    64; part_rows 0: the forward's largest last-tile box, a tile's with the tile loop, LAST_TILE_PART_ROWS without;
    dynamic: items taken from a counter, the kernels' DYNAMIC (round 137's patch); prefetch_next: the forward's
    PREFETCH_NEXT (round 140's patch); register_tiles: the backward's tiles of each tensor held in registers, its
    REG (round 152)); poll_sleep: nanoseconds slept before each re-read of the slots, the kernels' POLL_SLEEP
    (round 166's patch); extra: further constexprs of a probe's patch, by name; lag: two items of slots tiles each a
    program, _tma_lag_fwd_kernel or _tma_lag_bwd_kernel (rounds 168-170); tma_store: the forward's pass 2 through
    TMA stores, its TMA_STORE (round 179); rows_dynamic: the forward's whole rows from a counter, its ROWS_DYNAMIC
    (round 182))."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from kernels import gluon_softmax as gs
    from sass_digest import cuobjdump

    elem = 4 if dtype == "fp32" else 2
    maxnreg = maxnreg or gs._register_share(programs, warps)
    tile, width = warps * 32 * vectors * 16 // elem, 512 // elem
    layout = f"NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth={8 * elem}, rank=2)"
    desc, pointer = f"tensordesc<{dtype}[{tile // width},{width}],{layout}>", "*" + dtype
    scalars = {"slots_ptr": "*i64", "n_rows": "i32", "n_cols": "i32", "n_segments": "i32", "segment_cols": "i32",
               "max_polls": "i32"}
    if op == "forward":
        part_rows = part_rows or (tile // width if tile_loop else gs.LAST_TILE_PART_ROWS)
        part_desc = f"tensordesc<{dtype}[{part_rows},{width}],{layout}>"
        signature = {"output_ptr": pointer, "input_ptr": pointer, "in_desc": desc, "part_desc": part_desc, **scalars}
        kernel_fn, divisible = gs._tma_stream_fwd_kernel, (0, 1, 4)
        kind = dict(LOOSE=triton.next_power_of_2(2 * 16 // elem + width) if loose else 0, TILE_LOOP=tile_loop)
        if "out_desc" in kernel_fn.arg_names:  # the output's descriptor, for TMA stores (round 179)
            signature = {**dict(list(signature.items())[:4]), "out_desc": desc, **scalars}
            divisible, kind["TMA_STORE"] = (0, 1, 5), tma_store
        if "rows_cap" in kernel_fn.arg_names:  # rows taken from a counter (round 182)
            signature["rows_cap"], kind["ROWS_DYNAMIC"] = "i32", rows_dynamic
        if "edge_step" in kernel_fn.arg_names:  # a row's first and last segments shortened (round 203b)
            signature["edge_step"] = "i32"
        if aligned or "ALIGNED" in kernel_fn.arg_names:  # a kernel without the cut (round 129) compiles without it
            kind["ALIGNED"] = aligned
        if "TAIL" in kernel_fn.arg_names:  # a tensor's last elements past the view, apart (round 193; extra sets it)
            kind["TAIL"] = 0
        if "LOOSE_WHERE" in kernel_fn.arg_names:  # the loose block only where an item has any (round 198; extra
            kind["LOOSE_WHERE"] = loose  # turns it off, as the launcher does for rows of few aligned segments)
        if lag:  # the tiles as a loop, no part descriptor (LOOSE and ALIGNED since round 173)
            signature = {"output_ptr": pointer, "input_ptr": pointer, "in_desc": desc, **scalars}
            kernel_fn, divisible = gs._tma_lag_fwd_kernel, (0, 1, 3)
            kind = {key: kind.get(key, False) for key in ("LOOSE", "ALIGNED") if key in kernel_fn.arg_names}
    else:
        signature = {"grad_input_ptr": pointer, "output_ptr": pointer, "grad_output_ptr": pointer, "y_desc": desc,
                     "dy_desc": desc, **scalars}
        kernel_fn, divisible = (gs._tma_lag_bwd_kernel if lag else gs._tma_stream_bwd_kernel), (0, 1, 2, 5)
        kind = dict(ALIGN=16 // elem) if lag else dict(ALIGN=16 // elem, REG=register_tiles * tile)
    if dynamic:
        kind["DYNAMIC"] = True
    if prefetch_next:
        kind["PREFETCH_NEXT"] = 1
    if poll_sleep:
        kind["POLL_SLEEP"] = poll_sleep
    kind.update(extra or {})
    segments_block = segments_block or (32 if programs == 1 else 64)  # more programs, more segments a row
    constexprs = dict(TILE=tile, SLOTS=slots, VEC=16 // elem, SEGMENTS_BLOCK=segments_block, NUM_WARPS=warps, **kind)
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    kernel = triton.compile(GluonASTSource(fn=kernel_fn, signature=signature, constexprs=constexprs,
                                           attrs={(i,): [["tt.divisibility", 16]] for i in divisible}),
                            target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": warps, **({"maxnreg": maxnreg} if maxnreg else {})})
    usage, sass = cuobjdump(kernel, "-res-usage"), cuobjdump(kernel, "-sass")
    used = {key: int(value) for key, value in re.findall(r"(REG|STACK|LOCAL):(\d+)", usage)}
    return {"triton": triton.__version__, "registers": used["REG"], "stack": used["STACK"], "local": used["LOCAL"],
            "shared": kernel.metadata.shared, "register_cap": maxnreg or 255,
            "instructions": len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M)),
            "tma_loads": sass.count("UTMALDG"), "vector_stores": sass.count("STG.E.128"),
            "exp2": sass.count("MUFU.EX2")}


def main(argv: list) -> None:
    """Parse the command line, compile, print the facts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", choices=("forward", "backward"))
    parser.add_argument("dtype", choices=("fp32", "fp16", "bf16"))
    for name in ("programs", "warps", "vectors", "slots"):
        parser.add_argument(f"--{name}", type=int, required=True)
    for name in ("maxnreg", "segments-block", "part-rows", "register-tiles", "poll-sleep"):
        parser.add_argument(f"--{name}", type=int, default=0)
    for name in ("loose", "tile-loop", "aligned", "dynamic", "prefetch-next", "lag", "tma-store", "rows-dynamic"):
        parser.add_argument(f"--{name}", action="store_true")
    args = parser.parse_args(argv)
    print(json.dumps(facts(args.op, args.dtype, args.programs, args.warps, args.vectors, args.slots, args.loose,
                           args.tile_loop, args.aligned, args.maxnreg, args.segments_block, args.part_rows,
                           args.dynamic, args.prefetch_next, args.register_tiles, args.poll_sleep, lag=args.lag,
                           tma_store=args.tma_store, rows_dynamic=args.rows_dynamic)))


if __name__ == "__main__":
    main(sys.argv[1:])
