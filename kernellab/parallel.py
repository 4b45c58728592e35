"""The second pair of hands of a large build: one worker process, forked when the build starts.

The worker compiles the page templates into their cache and imports matplotlib (when plots are
to be drawn), then validates a share of the run artifacts against the schema while this process
parses them all and validates the rest. When the plots are known, it forks one helper per spare
CPU, warm from that import, and they draw them while this process judges and renders the pages;
the run pages render meanwhile in a child forked from this process (Forked), which sees the
loaded runs without a copy.

Everything a worker makes is what this process would make: the same functions on the same
inputs (the tests compare the bytes of a parallel and a serial build).
"""
import concurrent.futures
import gc
import marshal
import multiprocessing
import os
import traceback

from kernellab.errors import BuildError

MAX_PROCESSES = 8  # drawing processes at most: a build has a few dozen plots


def usable_cpus() -> int:
    """How many CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux; not Windows; macOS only by spawning)."""
    return "fork" in multiprocessing.get_all_start_methods() and os.name == "posix" and os.uname().sysname != "Darwin"


_CHECKED: list = []  # in the worker: the artifacts it validated, kept so that none is freed (it ends by os._exit)
# Shared by this process and the worker, made before the worker is forked: [the index of the file
# this process is reading, the lowest index the worker has claimed]. See load_runs.
_PROGRESS = None


def check_from_the_end(paths: list, read_artifact) -> tuple:
    """Worker side: validate artifacts from the last one back, until this process's reading
    reaches the next; ({index: reading} of those that passed, [(index, BuildError)] of the rest)."""
    readings, errors = {}, []
    enabled = gc.isenabled()
    gc.disable()  # millions of objects and no cycles: collections would only cost time
    try:
        j = len(paths) - 1
        while j >= 0 and _PROGRESS[0] < j:
            _PROGRESS[1] = j  # claimed: this process no longer checks it, so it is checked here whatever happens
            try:
                artifact, readings[j] = read_artifact(paths[j])
                _CHECKED.append(artifact)
            except BuildError as exc:
                errors.append((j, exc))
            j -= 1
        return readings, errors
    finally:
        gc.freeze()  # the kept artifacts: later collections, while drawing, need not walk them
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
        global _PROGRESS
        self.processes, self.futures = processes, []
        _PROGRESS = multiprocessing.RawArray("q", 2)  # before the fork, so that the worker shares it
        self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        # Warming up before loading puts matplotlib's import (most of a second) off the path to
        # the first plot; this process reads artifacts meanwhile.
        if warm_up:
            self.pool.submit(warm_worker)

    def check(self, paths: list, read_artifact) -> concurrent.futures.Future:
        """Start validating artifacts from the last back; the future holds check_from_the_end's answer."""
        return self._submit(check_from_the_end, paths, read_artifact)

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


def load_runs(paths: list, read_artifact, workers: Workers | None) -> list:
    """The artifacts at paths, in order, read here; the worker, if there is one, validates some.

    This process parses every file in order and validates each one the worker has not claimed;
    the worker validates from the last file back until the two meet, so each does what its speed
    allows. A file both happen to check is checked twice, never none. Errors: the first failing
    file in path order (the worker's message for a file both fail, as a full read gives it).
    """
    if workers is None or len(paths) < 2:
        return [read_artifact(path)[0] for path in paths]
    _PROGRESS[0], _PROGRESS[1] = -1, len(paths)
    future = workers.check(paths, read_artifact)
    loaded, errors = [], []
    try:
        for i, path in enumerate(paths):
            _PROGRESS[0] = i
            try:
                loaded.append(read_artifact(path, check=i < _PROGRESS[1])[0])
            except BuildError as exc:
                errors.append((i, 1, exc))
                break
    finally:
        _PROGRESS[0] = len(paths)  # the worker stops at its next file
    readings, their_errors = future.result()
    errors += [(j, 0, exc) for j, exc in their_errors]
    if errors:
        raise min(errors, key=lambda e: e[:2])[2]
    for j, reading in readings.items():
        if reading != "fast":  # the worker needed json's reading of this file: take the same
            loaded[j] = read_artifact(paths[j], check=False, reading=reading)[0]
    return loaded
