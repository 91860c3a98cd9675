"""Screenshots of pages at a phone's and a desktop's width, to look at after a run.

They go to $BROWSER_SCREENSHOTS, else `.screenshots/` at the project root (git-ignored).
"""

import os
from pathlib import Path

WIDTHS = (375, 1440)
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / ".screenshots"


def screenshot_folder() -> Path:
    folder = Path(os.environ.get("BROWSER_SCREENSHOTS") or DEFAULT_FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page, name: str) -> list[Path]:
    """Full-page PNGs of `page` as it is now, one per width: `<name>-375.png`, `<name>-1440.png`."""
    original = page.viewport_size
    paths = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        path = screenshot_folder() / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        paths.append(path)
    page.set_viewport_size(original)
    return paths
