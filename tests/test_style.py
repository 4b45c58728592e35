"""The stylesheet's colours pass WCAG AA contrast (4.5:1 for text) in the light and the dark theme."""
import re

import pytest

from labfixtures import REPO

CSS = (REPO / "templates" / "style.css").read_text()
# (text colour, background) pairs the templates actually use
PAIRS = [("fg", "bg"), ("muted", "bg"), ("link", "bg"), ("fg", "card"), ("muted", "card"), ("link", "card"),
         ("ok", "ok-bg"), ("bad", "bad-bg"), ("mid", "mid-bg"), ("inv", "inv-bg"), ("none", "none-bg"),
         ("bad", "bg"), ("fg", "mid-bg"), ("fg", "bad-bg")]


def theme(block: str) -> dict:
    """{name: '#rrggbb'} of the custom properties declared in a CSS block."""
    return dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{6})", block))


def luminance(hex_colour: str) -> float:
    """WCAG relative luminance of an sRGB colour."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


LIGHT = theme(CSS.split("@media (prefers-color-scheme: dark)")[0])
DARK = dict(LIGHT, **theme(CSS.split("@media (prefers-color-scheme: dark)")[1].split("}")[0]))


@pytest.mark.parametrize("name,colours", [("light", LIGHT), ("dark", DARK)])
@pytest.mark.parametrize("text,background", PAIRS)
def test_text_contrast_is_at_least_aa(name, colours, text, background):
    ratio = contrast(colours[text], colours[background])
    assert ratio >= 4.5, f"{name}: --{text} on --{background} is {ratio:.2f}:1"
