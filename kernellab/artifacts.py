"""Run artifacts: the JSON files in runs/. Validate against the schema, migrate, load, write.

Like asv's results files: every artifact carries `schema_version`; loading refuses versions
it does not know, and migrates older ones one step at a time (update_to_N).
"""
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from kernellab.errors import BuildError

try:  # parses artifacts 2-3x faster than json (a cold build of 200 runs is mostly parsing)
    import orjson
except ImportError:  # the GPU image has no orjson: --run then renders with json, to the same values
    orjson = None

SCHEMA_VERSION = 2
SCHEMA_PATH = Path(__file__).with_name("run-artifact.schema.json")
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _from_version_1(artifact: dict) -> dict:
    """Version 2 adds git.kernels_sha256: a version 1 artifact did not record which kernels/ it measured."""
    git = artifact.get("git")
    return dict(artifact, schema_version=2, git=dict(git, kernels_sha256=None) if isinstance(git, dict) else git)


# version N-1 -> N. Each step takes the artifact dict of the older version and returns the newer.
MIGRATIONS: dict = {1: _from_version_1}

_JSON_TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def _is_type(value, type_name: str) -> bool:
    """Whether a JSON value has the JSON Schema type (bool is not a number here)."""
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES[type_name])


def schema_errors(value, schema: dict = SCHEMA, where: str = "$") -> list[str]:
    """Validate value against the subset of JSON Schema our schema uses; return messages."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return schema_errors(value, SCHEMA["$defs"][name], where)
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not schema_errors(value, s, where)]
        if len(matching) == 1:
            return []
        branch_errors = [e for s in schema["oneOf"] for e in schema_errors(value, s, where)]
        return branch_errors or [f"{where}: matches more than one allowed form"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: must be {schema['const']!r}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: must be one of {schema['enum']}, got {value!r}"]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, t) for t in types):
            return [f"{where}: must be {' or '.join(types)}, got {type(value).__name__}"]
    errors = []
    if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
        errors.append(f"{where}: must be >= {schema['minimum']}, got {value}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{where}: missing key {k!r}" for k in schema.get("required", []) if k not in value]
        for key, item in sorted(value.items()):
            if key in props:
                errors += schema_errors(item, props[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unknown key {key!r}")
    if isinstance(value, list) and "items" in schema:
        items = schema["items"]
        if items == {"type": "number", "minimum": 0}:  # timing samples: thousands per result, checked fast
            if not set(map(type, value)) <= {int, float} or (value and min(value) < 0):
                bad = next(i for i, v in enumerate(value) if type(v) not in (int, float) or v < 0)
                errors.append(f"{where}[{bad}]: must be a number >= 0, got {value[bad]!r}")
            return errors
        for i, item in enumerate(value):
            errors += schema_errors(item, items, f"{where}[{i}]")
    return errors


# The exact Python types of the values json.loads makes for each JSON Schema type. The fast check
# compares type(value) with these: stricter than isinstance, so a subclass (numpy's float64) is left
# to schema_errors to judge.
_EXACT_TYPES = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}
_SAMPLES = {"type": "number", "minimum": 0}  # the items of samples_ms, which schema_errors checks in bulk


def _samples_ok(value: list) -> bool:
    """Whether every item is a number >= 0, by the very test schema_errors applies to samples."""
    return set(map(type, value)) <= {int, float} and not (value and min(value) < 0)


def compile_check(schema: dict = SCHEMA):
    """A predicate that is True only where schema_errors(value, schema) finds nothing.

    The walk through the schema is done once, here, rather than once per value: for hundreds of
    artifacts of thousands of samples that is seconds. The predicate never explains: where it says
    False, schema_errors is asked for the messages (and finds none for a value only json.loads
    would not make, such as a numpy float, which the predicate refuses to judge).
    """
    if "$ref" in schema:
        return compile_check(SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[-1]])
    if "oneOf" in schema:
        if not _disjoint_types(schema["oneOf"]):
            return lambda value: not schema_errors(value, schema)  # overlapping forms: only the walker can tell
        branches = [compile_check(s) for s in schema["oneOf"]]
        return lambda value: [check(value) for check in branches].count(True) == 1
    checks = []
    if "const" in schema:
        checks.append(lambda value, const=schema["const"]: not value != const)
    if "enum" in schema:
        checks.append(lambda value, enum=schema["enum"]: value in enum)
    if "type" in schema:
        exact = _exact_types(schema)
        checks.append(lambda value: type(value) in exact)
    if "minimum" in schema:
        checks.append(lambda value, low=schema["minimum"]: not (_is_type(value, "number") and value < low))
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        checks.append(lambda value: not isinstance(value, str) or search(value) is not None)
    if "properties" in schema or "required" in schema or schema.get("additionalProperties") is False:
        checks.append(_object_check(schema))
    if "items" in schema:
        if schema["items"] == _SAMPLES:
            checks.append(lambda value: not isinstance(value, list) or _samples_ok(value))
        else:
            item = compile_check(schema["items"])
            checks.append(lambda value: not isinstance(value, list) or all(map(item, value)))
    if len(checks) == 1:
        return checks[0]

    def every(value) -> bool:
        """All the checks of this schema node."""
        for check in checks:
            if not check(value):
                return False
        return True

    return every


def _exact_types(schema: dict) -> tuple:
    """The exact Python types a schema node's "type" admits."""
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return tuple({t: None for name in names for t in _EXACT_TYPES[name]})


def _disjoint_types(forms: list) -> bool:
    """Whether no value can have the declared type of two forms (so at most one form can match)."""
    seen = set()
    for form in forms:
        while "$ref" in form:
            form = SCHEMA["$defs"][form["$ref"].rsplit("/", 1)[-1]]
        if "type" not in form:
            return False
        names = form["type"] if isinstance(form["type"], list) else [form["type"]]
        kinds = {"number" if name == "integer" else name for name in names}  # an integer is a number
        if kinds & seen:
            return False
        seen |= kinds
    return True


def _object_check(schema: dict):
    """The part of compile_check for an object: required keys, no unknown keys, each value's schema."""
    props = schema.get("properties", {})
    # Values whose schema is a type alone are checked here, inline: most are, and a call each adds up.
    typed = {key: _exact_types(sub) for key, sub in props.items() if set(sub) <= {"type", "description"}}
    other = {key: compile_check(sub) for key, sub in props.items() if key not in typed}
    required = frozenset(schema.get("required", []))
    closed = schema.get("additionalProperties") is False

    def check(value) -> bool:
        """Keys and values of one object; a value that is no dict is left to the other checks."""
        if not isinstance(value, dict):
            return True
        if not required <= value.keys() or (closed and not value.keys() <= props.keys()):
            return False
        for key, item in value.items():
            exact = typed.get(key)
            if exact is not None:
                if type(item) not in exact:
                    return False
            elif key in other and not other[key](item):
                return False
        return True

    return check


def semantic_errors(artifact: dict) -> list[str]:
    """Checks the schema cannot express: imported runs name their source, ids are unique."""
    errors = []
    if artifact.get("origin") == "imported" and "source" not in artifact:
        errors.append("$: an imported artifact must name its source")
    if artifact.get("origin") == "measured" and "source" in artifact:
        errors.append("$: a measured artifact must not carry an imported source")
    seen = set()
    for i, r in enumerate(artifact.get("results", [])):
        key = (r.get("experiment"), r.get("case"), r.get("profile"), r.get("dtype"), r.get("pass"))
        if key in seen:
            errors.append(f"$.results[{i}]: duplicate result for {key}")
        seen.add(key)
        if r.get("status") == "ok" and r.get("timing") is None and "reported_speedup" not in r:
            errors.append(f"$.results[{i}]: status ok but no timing")
    return errors


def migrate(artifact: dict, path) -> dict:
    """Bring an artifact to SCHEMA_VERSION step by step, or refuse an unknown version (or no object)."""
    if not isinstance(artifact, dict):
        raise BuildError(path, "a run artifact must be a JSON object")
    version = artifact.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise BuildError(path, f"schema_version must be an integer, got {version!r}")
    if version > SCHEMA_VERSION or (version < SCHEMA_VERSION and version not in MIGRATIONS):
        raise BuildError(
            path,
            f"unknown schema_version {version}: this Kernel Lab reads versions "
            f"{min([SCHEMA_VERSION, *MIGRATIONS])} to {SCHEMA_VERSION}; upgrade Kernel Lab to read it",
        )
    while artifact["schema_version"] < SCHEMA_VERSION:
        artifact = MIGRATIONS[artifact["schema_version"]](artifact)
    return artifact


def validate(artifact: dict, path) -> dict:
    """Migrate and validate one artifact dict; raise BuildError listing every problem."""
    artifact = migrate(artifact, path)
    errors = ([] if _artifact_ok(artifact) else schema_errors(artifact)) or semantic_errors(artifact)  # semantics assume the right shape
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise BuildError(path, f"invalid run artifact: {shown}")
    return artifact


_artifact_ok = compile_check(SCHEMA)


# Where the hashes of artifacts already validated by this exact code are remembered; None: no cache.
CACHE_DIR: Path | None = None
_VALIDATOR_VERSION = hashlib.sha256(Path(__file__).read_bytes() + SCHEMA_PATH.read_bytes()).hexdigest()


def parse_json(raw: bytes, fast: bool = True):
    """The JSON value of raw UTF-8 bytes: by orjson where it can (fast), else by json.

    The two agree on every value but integers past 64 bits, which orjson reads as floats, and
    orjson refuses some files json takes (NaN, 1e400, lone surrogates): those go to json, which
    parses them or raises the error a user reads.
    """
    if fast and orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw.decode("utf-8"))


def load_artifact(path: Path) -> dict:
    """Read, migrate and validate one artifact file."""
    return read_artifact(path)[0]


def read_artifact(path: Path, check: bool = True, reading: str | None = None) -> tuple:
    """(artifact, reading) of one file: read, migrated and, if check, validated.

    reading says how the bytes were parsed: "fast" (orjson) or "exact" (json, for what orjson
    reads differently). check=False is for a file another process validates at the same time
    (parallel.load_runs), which then says which reading to use; it still parses and migrates it
    and checks the run_id.
    """
    try:
        raw = Path(path).read_bytes()
        data = parse_json(raw, fast=reading != "exact")
    except FileNotFoundError:
        raise BuildError(path, "file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(path, f"not valid JSON: {exc}") from None
    if not check:
        artifact = migrate(data, path)
    else:
        artifact, reading = _checked(data, raw, path)
    if data.get("schema_version") != artifact["schema_version"]:  # migrated: the page names the file's own version
        artifact["file_schema_version"] = data["schema_version"]
    expected = Path(path).stem
    if artifact.get("run_id") != expected:  # get: unchecked, the artifact may lack it
        raise BuildError(path, f"run_id {artifact.get('run_id')!r} does not match the file name {expected!r}")
    return artifact, reading


def _marker_name(raw: bytes) -> str:
    """The cache marker's name for these bytes under this validator (no copy of raw is made)."""
    digest = hashlib.sha256(raw)
    digest.update(_VALIDATOR_VERSION.encode())
    return digest.hexdigest()


def _checked(data, raw: bytes, path) -> tuple:
    """(artifact, reading) of parsed data, validated (or known valid from the cache's marker)."""
    # Artifacts never change once written: the same bytes checked by the same validator need no
    # second schema walk (it dominates a build of hundreds of runs with all their samples). The
    # marker says which reading passed, so a rebuild reads the file as the first build did.
    marker = CACHE_DIR / _marker_name(raw) if CACHE_DIR else None
    reading = marker.read_text() if marker is not None and marker.exists() else None
    if reading in ("fast", "exact") and isinstance(data, dict):  # these bytes passed, after their migration
        return migrate(data if reading == "fast" else parse_json(raw, fast=False), path), reading
    try:
        artifact, reading = validate(data, path), "fast"
    except BuildError:
        if orjson is None:
            raise
        # Read by json instead: its whole integers may pass where orjson's floats did not, and
        # its reading is the one judged and explained.
        artifact, reading = validate(parse_json(raw, fast=False), path), "exact"
    if marker is not None:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(reading)
    return artifact, reading


def dumps(artifact: dict) -> str:
    """Readable, stable JSON: named keys, sorted, indented."""
    return json.dumps(artifact, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_artifact(artifact: dict, runs_dir: Path) -> Path:
    """Validate, then write runs/<run_id>.json atomically: a crash leaves no half file."""
    path = Path(runs_dir) / f"{artifact['run_id']}.json"
    validate(artifact, path)
    if path.exists():
        raise BuildError(path, "refusing to overwrite an existing run artifact")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(artifact))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
