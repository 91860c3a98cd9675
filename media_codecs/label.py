"""The visible disclosure: a label a person sees on the content, worded and placed as the generator chose.

Images (and, later, video frames) get a corner label: white text on a darkened box, its text height a share of
the picture's width (`size`, percent), never under MIN_SIZE percent, so the label's text stays at least 12 CSS
pixels tall when the picture is shown 375 pixels wide (a phone). Text gets a leading line, HTML a leading
paragraph. The label is drawn before the invisible mark is embedded, so the mark covers it too.
"""

from __future__ import annotations

from dataclasses import dataclass

POSITIONS = ("bottom-right", "bottom-left", "top-right", "top-left")
DEFAULT_TEXT = "AI-generated"
DEFAULT_SIZE = 4.0  # percent of the picture's width
MIN_SIZE = 3.2  # 12 px of text at 375 px wide
MAX_SIZE = 10.0  # a bigger label costs a 12 MP picture over 20 ms to draw (docs/performance.md)
MAX_TEXT = 80  # characters


@dataclass(frozen=True)
class Label:
    text: str = DEFAULT_TEXT
    position: str = "bottom-right"
    size: float = DEFAULT_SIZE

    def __post_init__(self):
        if not self.text.strip() or len(self.text) > MAX_TEXT or not self.text.isprintable():
            raise ValueError(f"a label is 1 to {MAX_TEXT} printable characters")
        if self.position not in POSITIONS:
            raise ValueError(f"a label's position is one of {', '.join(POSITIONS)}")
        if not MIN_SIZE <= self.size <= MAX_SIZE:
            raise ValueError(f"a label's size is {MIN_SIZE} to {MAX_SIZE} percent of the picture's width")
