"""Moving through the dashboard in the browser tests, as a person does: click and wait for the next page."""

import re


def follow(page, locator) -> None:
    """Click what follows a link or submits a form, and wait for the next page (checks must not read
    the page that is going away)."""
    with page.expect_navigation():
        locator.click()


def nav(page, name: str) -> None:
    """Open a page from the main navigation by its link's name."""
    follow(page, page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True))


def messages(page) -> str:
    """The text of the page's flash messages."""
    return page.inner_text(".messages")


def path(page) -> str:
    """The page's address without scheme and host."""
    return re.sub(r"^https?://[^/]+", "", page.url)
