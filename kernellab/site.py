"""Write the rendered files into public/ atomically: a failed build leaves the old site whole."""
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath


class SiteWriter:
    """Collects {relative path: bytes}; refuses one path twice and paths that escape the site."""

    def __init__(self):
        self.files = {}

    def add(self, rel_path: str, data: bytes) -> None:
        """Queue one file."""
        path = PurePosixPath(rel_path)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"refusing to write outside the site: {rel_path!r}")
        if str(path) in self.files:
            raise ValueError(f"refusing to write {rel_path!r} twice")
        self.files[str(path)] = data

    def commit(self, out_dir: Path) -> None:
        """Write everything into a temporary sibling folder, then swap it in for out_dir."""
        out_dir = Path(out_dir).resolve()
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
        try:
            for rel_path, data in sorted(self.files.items()):
                target = staging / rel_path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            os.chmod(staging, 0o755)
            old = None
            if out_dir.exists():
                old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
                os.replace(out_dir, old)
            os.replace(staging, out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
