"""The second pair of hands of a large build: one worker process, forked when the build starts.

While this process loads some of the run artifacts, the worker loads the others and hands them
back as marshal bytes (read back three times faster than JSON parses), compiles the page
templates into their cache, then imports matplotlib. When the plots are known, it forks one
helper per spare CPU, warm from that import, and they draw them while this process renders the
pages.

Everything a worker makes is what this process would make: the same functions on the same
inputs (the tests compare the bytes of a parallel and a serial build).
"""
import concurrent.futures
import gc
import marshal
import multiprocessing
import os
import traceback
from pathlib import Path

from kernellab.errors import BuildError

MAX_PROCESSES = 8  # drawing processes at most: a build has a few dozen plots


def usable_cpus() -> int:
    """How many CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux; not Windows; macOS only by spawning)."""
    return "fork" in multiprocessing.get_all_start_methods() and os.name == "posix" and os.uname().sysname != "Darwin"


def load_share(paths: list, load_artifact) -> tuple:
    """Worker side: load artifacts in order until one fails; (marshal bytes of those loaded, the
    BuildError of the one that failed or None)."""
    loaded, error = [], None
    enabled = gc.isenabled()
    gc.disable()  # millions of objects and no cycles: collections would only cost time
    try:
        for path in paths:
            try:
                loaded.append(load_artifact(path))
            except BuildError as exc:
                error = exc
                break
        return marshal.dumps(loaded), error
    finally:
        if enabled:
            gc.enable()


def warm_worker() -> None:
    """Worker side: compile the page templates into their cache for this process to read, then
    import matplotlib and draw one figure, before the plots are asked for."""
    from kernellab import plots, render

    render.compile_templates()
    plots.warm_up()
    gc.freeze()  # matplotlib's objects (tens of thousands) live as long as the worker: collections skip them


def draw_share(jobs: list) -> list:
    """Worker or helper side: [SVG bytes] of [(plot, args)], in order."""
    from kernellab import plots

    return [plots.draw(plot, args) for plot, args in jobs]


_HELPERS: list = []  # in the worker: its pool of helper processes, forked at its first drawing and kept


def draw_all(jobs: list, processes: int) -> list:
    """Worker side: [SVG bytes] of [(plot, args)], drawn here and in processes - 1 helpers.

    Forked after matplotlib is imported, the helpers start warm, and they stay for the next
    batch; each process takes every n-th job, so the costly kinds of plot spread evenly.
    """
    processes = max(1, min(processes, len(jobs)))
    if processes == 1:
        return draw_share(jobs)
    if not _HELPERS:
        _HELPERS.append(concurrent.futures.ProcessPoolExecutor(
            processes - 1, mp_context=multiprocessing.get_context("fork")))
    shares = [jobs[i::processes] for i in range(processes)]
    theirs = [_HELPERS[0].submit(draw_share, share) for share in shares[1:]]
    drawn = [draw_share(shares[0])] + [future.result() for future in theirs]
    out = [None] * len(jobs)
    for i, share in enumerate(drawn):
        out[i::processes] = share
    return out


def stop_helpers() -> None:
    """Worker side: let the helper processes go (a worker leaves none behind)."""
    while _HELPERS:
        _HELPERS.pop().shutdown(wait=True, cancel_futures=True)


class Forked:
    """task() run in a child forked now, which sees everything this process holds without a copy;
    result() waits for its answer (marshal-able) or raises its error here."""

    def __init__(self, task):
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: answer through the pipe, then leave without cleaning up
            os.close(read_end)
            try:
                answer = marshal.dumps((True, task()))
            except BaseException:  # noqa: BLE001 - every failure goes back to the parent
                answer = marshal.dumps((False, traceback.format_exc()))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(answer)
            os._exit(0)
        os.close(write_end)
        self.pipe = os.fdopen(read_end, "rb")

    def result(self):
        """The task's return value; its exception, as a RuntimeError with the child's traceback."""
        with self.pipe:
            data = self.pipe.read()
        os.waitpid(self.pid, 0)
        ok, answer = marshal.loads(data) if data else (False, "the forked process died without an answer")
        if not ok:
            raise RuntimeError(f"a forked part of the build failed:\n{answer}")
        return answer


class Workers:
    """The worker process of one build (see the module's docstring); used from a `with` block."""

    def __init__(self, processes: int, warm_up: bool):
        """processes: how many may draw plots at once, this worker and its helpers; warm_up: whether
        plots will be drawn, so the worker compiles the templates and imports matplotlib first."""
        self.processes, self.futures = processes, []
        self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        # Warming up before loading puts matplotlib's import (most of a second) off the path to
        # the first plot; this process loads the larger share meanwhile.
        self.share = WORKER_SHARE_AFTER_WARM_UP if warm_up else WORKER_SHARE
        if warm_up:
            self.pool.submit(warm_worker)

    def load(self, paths: list, load_artifact) -> concurrent.futures.Future:
        """Start loading these artifacts with load_artifact; the future holds load_share's answer."""
        return self._submit(load_share, paths, load_artifact)

    def draw(self, jobs: list) -> concurrent.futures.Future:
        """Start drawing [(plot, args)]; the future holds [SVG bytes] in the same order."""
        return self._submit(draw_all, jobs, self.processes)

    def _submit(self, fn, *args) -> concurrent.futures.Future:
        """Queue fn(*args) in the worker, remembering it so that close() can drop it."""
        self.futures.append(self.pool.submit(fn, *args))
        return self.futures[-1]

    def close(self) -> None:
        """Stop the worker and its helpers, dropping what they have not started."""
        for future in self.futures:
            future.cancel()
        try:
            self.pool.submit(stop_helpers).result()
        except concurrent.futures.BrokenExecutor:
            pass  # the worker is gone, and its helpers with it
        self.pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# Of the bytes to load, the worker's share. This process reads the worker's share back too, but
# the worker has its own extra work (marshal, a fork): measured, half is as good as any. After
# warming up (0.8 s here), the worker has time left for less: a quarter evens the two out.
WORKER_SHARE = 0.5
WORKER_SHARE_AFTER_WARM_UP = 0.25


def split_by_size(sizes: list, share: float = WORKER_SHARE) -> tuple:
    """(mine, theirs): indexes of the files for this process and for the worker, each in order,
    the worker's holding about `share` of the bytes."""
    mine, theirs, my_bytes, their_bytes = [], [], 0, 0
    for i, size in enumerate(sizes):
        if their_bytes * (1 - share) <= my_bytes * share:
            theirs.append(i)
            their_bytes += size
        else:
            mine.append(i)
            my_bytes += size
    return mine, theirs


def load_runs(paths: list, load_artifact, workers: Workers | None) -> list:
    """The artifacts at paths, in order: a share of them loaded by the worker, if there is one.

    Each side loads its files in order and stops at its first failure, so the first file that
    fails in path order (as when loading alone) raises its BuildError.
    """
    if workers is None or len(paths) < 2:
        return [load_artifact(path) for path in paths]
    mine, theirs = split_by_size([Path(p).stat().st_size for p in paths], workers.share)
    future = workers.load([paths[i] for i in theirs], load_artifact)
    loaded, my_error = {}, None
    for i in mine:
        try:
            loaded[i] = load_artifact(paths[i])
        except BuildError as exc:
            my_error = exc
            break
    data, their_error = future.result()
    loaded.update(zip(theirs, marshal.loads(data)))
    for i in range(len(paths)):
        if i not in loaded:
            raise my_error if i in mine else their_error
    return [loaded[i] for i in range(len(paths))]
