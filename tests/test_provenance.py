"""Which kernels/ a run measured: its digest in the artifact (schema version 2), and the site and --check saying
when a headline run measured other kernels than the tree holds."""
import json

import pytest

from kernellab import artifacts, measure
from kernellab.cli import main, other_kernels_summary
from kernellab.content import load_content
from kernellab.errors import BuildError
from kernellab.source import kernels_digest
from labfixtures import DEVICE, artifact, make_project, winning_results

OTHER = "f" * 64


def write_kernels(folder, files: dict):
    """A kernels/ folder holding files {relative path: text}."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def test_digest_follows_every_file_s_path_and_bytes_and_nothing_else(tmp_path):
    base = {"a.py": "x = 1\n", "sub/b.py": "y = 2\n"}
    digest = kernels_digest(write_kernels(tmp_path / "k1", base))
    assert len(digest) == 64 and kernels_digest(write_kernels(tmp_path / "k2", base)) == digest
    (tmp_path / "k2" / "__pycache__").mkdir()
    (tmp_path / "k2" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "k2" / "notes.txt").write_text("not a kernel")
    assert kernels_digest(tmp_path / "k2") == digest  # bytecode and other files are not the kernels
    assert kernels_digest(write_kernels(tmp_path / "k3", dict(base, **{"a.py": "x = 2\n"}))) != digest
    assert kernels_digest(write_kernels(tmp_path / "k4", {"c.py": "x = 1\n", "sub/b.py": "y = 2\n"})) != digest
    # the same bytes cut differently between files hash differently
    assert kernels_digest(write_kernels(tmp_path / "k5", {"a.py": "x = 1\ny", "sub/b.py": " = 2\n"})) != digest
    assert kernels_digest(tmp_path / "empty") is None


def test_a_run_records_the_kernels_it_imports(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_GIT_COMMIT", "abc")
    monkeypatch.setenv("KERNEL_LAB_GIT_DIRTY", "0")
    write_kernels(tmp_path / "kernels", {"softmax.py": "def f(): pass\n"})
    assert measure.provenance(tmp_path) == {"commit": "abc", "dirty": False,
                                            "kernels_sha256": kernels_digest(tmp_path / "kernels")}


def test_version_1_artifacts_read_as_version_2_without_a_digest(tmp_path):
    old = artifact("20261121T100000Z-old", winning_results())
    old["schema_version"] = 1
    del old["git"]["kernels_sha256"]
    path = tmp_path / "20261121T100000Z-old.json"
    path.write_text(json.dumps(old))
    loaded = artifacts.load_artifact(path)
    assert loaded["schema_version"] == 2 and loaded["git"]["kernels_sha256"] is None
    assert old["git"] == {"commit": loaded["git"]["commit"], "dirty": False}  # the file's dict is not changed
    assert loaded["file_schema_version"] == 1  # for the run page: the raw file it links says 1


@pytest.mark.parametrize("digest", ["abc", "F" * 64, 12])
def test_a_malformed_digest_is_refused(tmp_path, digest):
    path = tmp_path / "20261121T100000Z-bad.json"
    path.write_text(json.dumps(artifact("20261121T100000Z-bad", winning_results(), kernels_sha256=digest)))
    with pytest.raises(BuildError, match="kernels_sha256"):
        artifacts.load_artifact(path)


def test_pages_and_check_say_which_runs_measured_other_kernels(tmp_path, capsys):
    current = kernels_digest()
    same = artifact("20261121T100000Z-same", winning_results(), device=DEVICE, kernels_sha256=current)
    other = artifact("20261121T110000Z-other", winning_results(), device="NVIDIA H200", kernels_sha256=OTHER)
    root = make_project(tmp_path, [same, other])
    assert main(["--root", str(root), "--out", str(root / "public")]) == 0
    read = lambda rel: (root / "public" / rel).read_text()  # noqa: E731
    assert f"<code>{current[:12]}</code>: this site's <code>kernels/</code>" in read("runs/20261121T100000Z-same.html")
    assert "not this site's <code>kernels/</code>" in read("runs/20261121T110000Z-other.html")
    assert "Kernels</dt><dd>n/a (imported)" in read("runs/imported-a10g-seed-004.html")
    assert "(schema version 1, read as version 2)" in read("runs/imported-a10g-seed-004.html")
    assert "(schema version 2)" in read("runs/20261121T100000Z-same.html")
    page = read("experiments/row-softmax-fusion.html")
    assert page.count("(other kernels)") >= 1 and "This run measured other kernels" in page
    assert page.count("This run measured other kernels") == 1  # the H200's group only
    lines = other_kernels_summary(load_content(root), current)
    assert any("row-softmax-fusion | NVIDIA H200 | 20261121T110000Z-other" in line for line in lines)
    assert not any("20261121T100000Z-same" in line for line in lines)
    assert main(["--root", str(root), "--out", str(root / "public"), "--check"]) == 0
    assert "Verdicts on other kernels" in capsys.readouterr().out


def test_check_names_no_run_where_the_kernels_match_or_were_not_recorded(tmp_path):
    runs = [artifact("20261121T100000Z-same", winning_results(), kernels_sha256=kernels_digest()),
            artifact("20261121T110000Z-old", winning_results(), device="NVIDIA H200")]
    assert other_kernels_summary(load_content(make_project(tmp_path, runs))) == []
