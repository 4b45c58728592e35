"""Artifact schema: validation messages, migration step by step, refusal of unknown versions."""
import json

import pytest

from kernellab import artifacts
from kernellab.errors import BuildError
from labfixtures import REPO, artifact, winning_results


def test_every_committed_artifact_validates():
    paths = sorted((REPO / "runs").glob("*.json"))
    assert paths
    for path in paths:
        artifacts.load_artifact(path)


def test_migrations_run_in_order_up_to_the_current_version(monkeypatch):
    steps = []
    monkeypatch.setattr(artifacts, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(artifacts, "MIGRATIONS", {
        1: lambda a: steps.append(1) or dict(a, schema_version=2, added_in_2=True),
        2: lambda a: steps.append(2) or dict(a, schema_version=3),
    })
    migrated = artifacts.migrate({"schema_version": 1}, "old.json")
    assert steps == [1, 2] and migrated == {"schema_version": 3, "added_in_2": True}


@pytest.mark.parametrize("version,message", [
    (99, "unknown schema_version 99: this Kernel Lab reads versions 1 to 1; upgrade Kernel Lab"),
    (0, "unknown schema_version 0"),
    ("1", "schema_version must be an integer"),
])
def test_unknown_versions_are_refused_with_the_file_named(tmp_path, version, message):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(dict(artifact("r", winning_results()), schema_version=version)))
    with pytest.raises(BuildError) as err:
        artifacts.load_artifact(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_schema_errors_name_the_place():
    bad = artifact("r", winning_results())
    bad["results"][0]["dtype"] = "float64"
    bad["results"][1]["timing"]["samples_ms"][3] = -1.0
    bad["surprise"] = 1
    errors = artifacts.schema_errors(bad)
    assert "$.results[0].dtype: must be one of ['float16', 'bfloat16', 'float32'], got 'float64'" in errors
    assert "$.results[1].timing.samples_ms[3]: must be a number >= 0, got -1.0" in errors
    assert "$: unknown key 'surprise'" in errors


def test_write_is_atomic_and_refuses_to_overwrite(tmp_path):
    run = artifact("20261121T000000Z-x", winning_results())
    path = artifacts.write_artifact(run, tmp_path)
    assert json.loads(path.read_text())["run_id"] == run["run_id"]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind
    with pytest.raises(BuildError, match="refusing to overwrite"):
        artifacts.write_artifact(run, tmp_path)
    with pytest.raises(BuildError, match="invalid run artifact"):
        artifacts.write_artifact(dict(run, run_id="other", results="nope"), tmp_path)
    assert len(list(tmp_path.iterdir())) == 1


def test_validation_cache_never_hides_an_edit(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "CACHE_DIR", tmp_path / "cache")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(artifact("r", winning_results())))
    artifacts.load_artifact(path)
    assert len(list((tmp_path / "cache").iterdir())) == 1
    broken = json.loads(path.read_text())
    broken["results"][0]["status"] = "maybe"
    path.write_text(json.dumps(broken))
    with pytest.raises(BuildError, match="status: must be one of"):
        artifacts.load_artifact(path)
