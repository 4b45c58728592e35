"""Kernel source for the kernel pages: find a function with ast, highlight Python with tokenize."""
import ast
import html
import io
import keyword
import tokenize
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
BUILTINS = {"range", "len", "min", "max", "int", "float", "isinstance", "tuple", "dict", "list", "getattr"}


def module_path(module: str) -> Path:
    """The file of a `kernels.*` module, without importing it (and so without torch)."""
    return KERNELS_DIR.parent.joinpath(*module.split(".")).with_suffix(".py")


def definition_lines(source: str, name: str) -> tuple:
    """(first, last) 1-based lines of a top-level def, decorators included, or None."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return first, node.end_lineno
    return None


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
    spans = {}  # (row, col) -> (end_row, end_col, css class)
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            css = _css_class(tok, previous)
            if css:
                spans[tok.start] = (tok.end, css)
            if tok.type == tokenize.NAME:
                previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        spans = {}
    out = []
    open_css, open_until = None, None
    for row, line in enumerate(lines, 1):
        parts = []
        if open_css:  # a multi-line string continues on this line
            parts.append(f'<span class="{open_css}">')
        col = 0
        while col < len(line):
            if open_css and open_until[0] == row and col == open_until[1]:
                parts.append("</span>")
                open_css = None
            if not open_css and (row, col) in spans:
                (end_row, end_col), css = spans[(row, col)]
                parts.append(f'<span class="{css}">')
                open_css, open_until = css, (end_row, end_col)
            parts.append(html.escape(line[col]))
            col += 1
        if open_css and open_until == (row, len(line)):
            open_css = None
            parts.append("</span>")
        elif open_css:
            parts.append("</span>")
        out.append("".join(parts))
    return out


def kernel_source(target: str) -> dict:
    """The module source and the entry function's line range for "module:function"."""
    module, _, function = target.partition(":")
    path = module_path(module)
    text = path.read_text(encoding="utf-8")
    return {"path": f"{'/'.join(module.split('.'))}.py", "lines": highlight_python(text),
            "entry": definition_lines(text, function), "function": function}
