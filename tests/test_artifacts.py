"""Artifact schema: validation messages, migration step by step, refusal of unknown versions."""
import json
import math

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
    (99, "unknown schema_version 99: this Kernel Lab reads versions 1 to 2; upgrade Kernel Lab"),
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


def _mutations(value, where=()):
    """(path, broken copy) pairs: every value of an artifact swapped for each wrong kind, every key
    dropped, an unknown key added to every object."""
    import copy

    wrong = [None, True, 0, -1, 2.5, -0.5, float("nan"), "x", [], [1, "a"], {}, {"k": 1}]
    if isinstance(value, dict):
        yield where + ("+unknown",), dict(value, unknown_key=1)
        for key, item in value.items():
            yield where + ("-" + key,), {k: v for k, v in value.items() if k != key}
            for bad in wrong:
                yield where + (key, repr(bad)), dict(value, **{key: bad})
            for path, broken in _mutations(item, where + (key,)):
                yield path, dict(value, **{key: broken})
    elif isinstance(value, list) and value:
        for bad in wrong:
            yield where + ("[0]", repr(bad)), [bad] + copy.deepcopy(value[1:])
        yield where + ("[-1]", "-1"), value[:-1] + [-1]
        for path, broken in _mutations(value[0], where + ("[0]",)):
            yield path, [broken] + value[1:]


def test_compiled_check_agrees_with_the_schema_walker_on_every_small_breakage():
    run = artifact("r", winning_results()[:1])
    run["results"][0]["timing"]["samples_ms"] = run["results"][0]["timing"]["samples_ms"][:3]
    run["copy_bandwidth"]["timing"]["samples_ms"] = [1.0, 2.0]
    run["results"][0]["compile"] = [{"kernel": "k", "n_regs": 32}]
    run["results"][0]["profiling"] = {"tool": "ncu", "kernels": [{"kernel": "k"}]}
    run["source"] = {"title": "t", "location": "l", "note": "n"}
    check = artifacts.compile_check()
    seen = 0
    for path, broken in _mutations(run):
        assert check(broken) == (artifacts.schema_errors(broken) == []), path
        seen += 1
    assert seen > 1000
    assert check(run) and artifacts.schema_errors(run) == []


def test_validate_gives_the_walkers_messages_and_accepts_what_it_accepts():
    bad = artifact("r", winning_results())
    bad["results"][0]["dtype"] = "float64"
    bad["results"][1]["timing"]["samples_ms"][3] = True
    with pytest.raises(BuildError) as err:
        artifacts.validate(bad, "r.json")
    assert str(err.value) == "r.json: invalid run artifact: " + "; ".join(artifacts.schema_errors(bad))
    # A value json.loads never makes (a numpy float) is left to the walker, which accepts it.
    numpy = pytest.importorskip("numpy")
    odd = artifact("r", winning_results())
    odd["results"][0]["timing"]["median_ms"] = numpy.float64(0.01)
    assert not artifacts.compile_check()(odd)
    assert artifacts.validate(odd, "r.json") is odd


def test_a_worker_raises_the_same_build_error():
    import pickle

    exc = pickle.loads(pickle.dumps(BuildError("runs/x.json", "not valid JSON: oops")))
    assert (exc.path, exc.problem, str(exc)) == ("runs/x.json", "not valid JSON: oops", "runs/x.json: not valid JSON: oops")


def test_orjson_and_json_read_every_committed_artifact_alike():
    if artifacts.orjson is None:
        pytest.skip("orjson is not installed")
    for path in sorted((REPO / "runs").glob("*.json")):
        raw = path.read_bytes()
        assert artifacts.parse_json(raw) == json.loads(raw), path.name


@pytest.mark.parametrize("fast", [True, False])
def test_an_integer_past_64_bits_is_read_as_json_reads_it_cold_and_warm(tmp_path, monkeypatch, fast):
    """orjson reads 2**64 as a float, which fails the schema's integer; json keeps it whole, and the
    build must not depend on which of the two is installed, nor on the validation cache."""
    if not fast:
        monkeypatch.setattr(artifacts, "orjson", None)
    monkeypatch.setattr(artifacts, "CACHE_DIR", tmp_path / "cache")
    run = artifact("20260101T000000Z-big", winning_results())
    run["results"][0]["bytes_moved"] = 2**64
    path = tmp_path / f"{run['run_id']}.json"
    path.write_text(json.dumps(run))
    cold = artifacts.load_artifact(path)
    warm = artifacts.load_artifact(path)  # from the cache's marker
    assert cold == warm == json.loads(path.read_text())
    assert type(cold["results"][0]["bytes_moved"]) is int and type(warm["results"][0]["bytes_moved"]) is int


def test_files_orjson_refuses_go_to_json_for_the_same_value_or_message(tmp_path):
    assert math.isnan(artifacts.parse_json(b'{"a": NaN}')["a"])
    assert artifacts.parse_json(b"[1e400]") == [float("inf")]
    bad = tmp_path / "20260101T000000Z-bad.json"
    bad.write_bytes(b'{"schema_version": 1,')
    with pytest.raises(BuildError, match="not valid JSON: Expecting property name"):
        artifacts.load_artifact(bad)
