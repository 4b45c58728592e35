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

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("run-artifact.schema.json")
SCHEMA = json.loads(SCHEMA_PATH.read_text())

# version N-1 -> N. Each step takes the artifact dict of the older version and returns the newer.
MIGRATIONS: dict = {}

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
    """Bring an artifact to SCHEMA_VERSION step by step, or refuse an unknown version."""
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
    if not isinstance(artifact, dict):
        raise BuildError(path, "a run artifact must be a JSON object")
    artifact = migrate(artifact, path)
    errors = schema_errors(artifact) or semantic_errors(artifact)  # semantics assume the right shape
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise BuildError(path, f"invalid run artifact: {shown}")
    return artifact


# Where the hashes of artifacts already validated by this exact code are remembered; None: no cache.
CACHE_DIR: Path | None = None
_VALIDATOR_VERSION = hashlib.sha256(Path(__file__).read_bytes() + SCHEMA_PATH.read_bytes()).hexdigest()


def load_artifact(path: Path) -> dict:
    """Read, migrate and validate one artifact file."""
    try:
        raw = Path(path).read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise BuildError(path, "file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(path, f"not valid JSON: {exc}") from None
    # Artifacts never change once written: the same bytes checked by the same validator need no
    # second schema walk (it dominates a build of hundreds of runs with all their samples).
    marker = CACHE_DIR / hashlib.sha256(raw + _VALIDATOR_VERSION.encode()).hexdigest() if CACHE_DIR else None
    if marker is not None and marker.exists() and data.get("schema_version") == SCHEMA_VERSION:
        artifact = data
    else:
        artifact = validate(data, path)
        if marker is not None:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    expected = Path(path).stem
    if artifact["run_id"] != expected:
        raise BuildError(path, f"run_id {artifact['run_id']!r} does not match the file name {expected!r}")
    return artifact


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
