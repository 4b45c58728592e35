"""Kernel source for the kernel pages: find a function with ast, highlight Python with tokenize."""
import ast
import functools
import hashlib
import html
import io
import keyword
import tokenize
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
BUILTINS = {"range", "len", "min", "max", "int", "float", "isinstance", "tuple", "dict", "list", "getattr"}


def kernels_digest(kernels_dir: Path = KERNELS_DIR):
    """sha256 of a kernels/ folder (every .py file's path and bytes, in path order), or None without one."""
    kernels_dir = Path(kernels_dir)
    files = sorted(p for p in kernels_dir.rglob("*.py") if "__pycache__" not in p.parts)
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        # each file framed by its path and length, so that no two trees hash alike
        digest.update(f"{path.relative_to(kernels_dir).as_posix()}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def module_path(module: str) -> Path:
    """The file of a `kernels.*` module, without importing it (and so without torch)."""
    return KERNELS_DIR.parent.joinpath(*module.split(".")).with_suffix(".py")


def definition_lines(source: str, name: str) -> tuple:
    """(first, last) 1-based lines of a top-level def, decorators included, or None."""
    return definitions(source).get(name)


@functools.lru_cache(maxsize=16)
def definitions(source: str) -> dict:
    """{name: (first, last)} for every top-level def and class: one parse per module, not per profile."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name not in found:
            found[node.name] = (min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno)
    return found


def _css_class(tok: tokenize.TokenInfo, previous: str) -> str:
    """The highlight class of one token, or ''."""
    if tok.type == tokenize.COMMENT:
        return "c"
    if tok.type == tokenize.STRING or tok.type in _FSTRING_TYPES:
        return "s"
    if tok.type == tokenize.NUMBER:
        return "m"
    if tok.type == tokenize.NAME:
        if keyword.iskeyword(tok.string):
            return "k"
        if previous in ("def", "class"):
            return "nf"
        if tok.string in BUILTINS:
            return "nb"
    if tok.type == tokenize.OP and tok.string == "@":
        return "nd"
    return ""


_FSTRING_TYPES = {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}


def highlight_python(source: str) -> list:
    """Escaped HTML, one string per source line, with <span class> around tokens."""
    lines = source.splitlines()
    out = [[] for _ in lines]
    cursor = [0] * len(lines)  # how far each line has been emitted

    def emit(row, upto, css=""):
        """Emit line `row` (1-based) from its cursor up to column `upto`, wrapped in css if given."""
        text = html.escape(lines[row - 1][cursor[row - 1]:upto], quote=False)
        if text:
            out[row - 1].append(f'<span class="{css}">{text}</span>' if css else text)
        cursor[row - 1] = max(cursor[row - 1], upto)

    previous = ""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    for tok in tokens:
        css = _css_class(tok, previous)
        if tok.type == tokenize.NAME:
            previous = tok.string
        if not css or tok.start[0] > len(lines):
            continue
        (start_row, start_col), (end_row, end_col) = tok.start, tok.end
        emit(start_row, start_col)  # plain text before the token
        for row in range(start_row, end_row + 1):  # multi-line strings span several lines
            emit(row, end_col if row == end_row else len(lines[row - 1]), css)
    for row, line in enumerate(lines, 1):
        emit(row, len(line))
    return ["".join(parts) for parts in out]


def numbered(lines, first: int = 1) -> str:
    """Highlighted lines as HTML, each after its line number, numbering from `first`.

    Joined here rather than looped over in the template: a module is a thousand lines, shown on
    every kernel page.
    """
    return "".join(f'<span class="ln">{i}</span>{line}\n' for i, line in enumerate(lines, first))


@functools.cache
def _module_listing(module: str) -> tuple:
    """(text, highlighted lines, numbered HTML) of a kernels module, computed once per build."""
    text = module_path(module).read_text(encoding="utf-8")
    lines = tuple(highlight_python(text))
    return text, lines, numbered(lines)


def kernel_source(target: str) -> dict:
    """The module source and the entry function's line range for "module:function"."""
    module, _, function = target.partition(":")
    text, lines, module_html = _module_listing(module)
    entry = definition_lines(text, function)
    return {"path": f"{'/'.join(module.split('.'))}.py", "lines": lines, "entry": entry, "function": function,
            "entry_html": numbered(lines[entry[0] - 1:entry[1]], entry[0]) if entry else "", "module_html": module_html}
