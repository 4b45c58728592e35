"""Write the rendered files into public/ atomically: a failed build leaves the old site whole."""
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath


class SiteWriter:
    """Writes files into a staging folder beside out_dir as they come, then swaps it in whole.

    Refuses one path twice and paths that escape the site. Used from a `with` block: leaving it
    without commit() (an error, a stopped build) removes the staging folder and leaves out_dir as
    it was. Writing as pages come lets the disk work while the last plots are drawn.
    """

    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir).resolve()
        self.files = set()
        self.staging = None

    def add(self, rel_path: str, data) -> None:
        """Write one file into the staging folder: data is its bytes, or the Path of a file to copy
        (the kernel copies it, never through this process's memory)."""
        path = PurePosixPath(rel_path)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"refusing to write outside the site: {rel_path!r}")
        if str(path) in self.files:
            raise ValueError(f"refusing to write {rel_path!r} twice")
        self.files.add(str(path))
        target = self._staging_dir().joinpath(*path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, Path):
            shutil.copyfile(data, target)
        else:
            target.write_bytes(data)

    def commit(self) -> None:
        """Swap the staging folder in for out_dir (an empty site if nothing was added)."""
        os.chmod(self._staging_dir(), 0o755)
        old = None
        if self.out_dir.exists():
            old = self.out_dir.with_name(f".{self.out_dir.name}.old-{os.getpid()}")
            os.replace(self.out_dir, old)
        try:
            os.replace(self.staging, self.out_dir)
        except OSError:
            if old is not None:
                os.replace(old, self.out_dir)  # put the old site back
            raise
        self.staging = None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _staging_dir(self) -> Path:
        """The staging folder beside out_dir, made at first use."""
        if self.staging is None:
            self.out_dir.parent.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.new-", dir=self.out_dir.parent))
        return self.staging

    def abort(self) -> None:
        """Remove what was staged; out_dir stays as it was."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.abort()
