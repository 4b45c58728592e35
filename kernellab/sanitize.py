"""Render untrusted Markdown (decision records come from pull requests) to safe HTML.

Markdown allows raw HTML, so the rendered output is rebuilt from an allowlist: unknown tags
are dropped (their text kept, except script-like tags whose content goes too), attributes are
kept only where listed, and links keep only http(s), mailto and relative targets.
"""
import html
import re
from html.parser import HTMLParser

import markdown

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
}
VOID_TAGS = {"br", "hr", "img"}
DROP_WITH_CONTENT = {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math", "textarea", "select"}
ALLOWED_ATTRS = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "abbr": {"title"},
                 "th": {"align"}, "td": {"align"}, "code": {"class"}}
SAFE_URL = re.compile(r"^(?:https?:|mailto:|[^:/?#]*(?:[/?#]|$))", re.I)
# Decision bodies sit under the page's own h1, so their headings move one level down.
HEADING_SHIFT = {"h1": "h2", "h2": "h3", "h3": "h4", "h4": "h5", "h5": "h6"}


def safe_url(url: str) -> bool:
    """Whether a link target is allowed (no javascript:, data:, vbscript: ...)."""
    compact = re.sub(r"[\x00-\x20]", "", html.unescape(url))
    return bool(SAFE_URL.match(compact))


class _Sanitizer(HTMLParser):
    """Rebuild HTML keeping only allowlisted tags and attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out = []
        self.dropping = 0  # depth inside a tag whose content is dropped
        self.open_tags = []

    def handle_starttag(self, tag, attrs):
        tag = HEADING_SHIFT.get(tag, tag)
        if tag in DROP_WITH_CONTENT:
            self.dropping += tag not in VOID_TAGS
            return
        if self.dropping or tag not in ALLOWED_TAGS:
            return
        kept = []
        for name, value in attrs:
            if name not in ALLOWED_ATTRS.get(tag, ()) or value is None:
                continue
            if name in ("href", "src") and not safe_url(value):
                continue
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        if tag == "a":
            kept.append(' rel="nofollow noopener"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in VOID_TAGS:
            self.open_tags.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        tag = HEADING_SHIFT.get(tag, tag)
        if tag in DROP_WITH_CONTENT:
            self.dropping -= 1
        elif not self.dropping and tag in ALLOWED_TAGS and tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        tag = HEADING_SHIFT.get(tag, tag)
        if tag in DROP_WITH_CONTENT:
            self.dropping = max(0, self.dropping - 1)
            return
        if self.dropping or tag not in self.open_tags:
            return
        while self.open_tags:  # close anything left open inside it, so nesting stays valid
            inner = self.open_tags.pop()
            self.out.append(f"</{inner}>")
            if inner == tag:
                break

    def handle_data(self, data):
        if not self.dropping:
            self.out.append(html.escape(data, quote=False))

    def result(self) -> str:
        """The sanitised HTML, with any still-open tags closed."""
        return "".join(self.out) + "".join(f"</{t}>" for t in reversed(self.open_tags))


def sanitize_html(raw: str) -> str:
    """Allowlist-sanitise an HTML fragment."""
    parser = _Sanitizer()
    parser.feed(raw)
    parser.close()
    return parser.result()


def render_markdown(text: str) -> str:
    """Markdown to sanitised HTML."""
    return sanitize_html(markdown.markdown(text, extensions=["tables", "fenced_code"], output_format="html"))
