"""What every page the browser tests open must satisfy, checked where it is screenshotted.

`look(page, name)`: at 375 px nothing is wider than the window (a phone never scrolls sideways; wide
tables scroll inside their own box), every visible form control has a label (a `<label for>`, a wrapping
`<label>`, `aria-label` or `aria-labelledby`), and then `shoot` writes the 375 and 1440 px PNGs.
`sign_in(page, email)` signs a user in through the login form, as the dashboard's tests start.
"""

from tests import factories
from tests.browser.screenshots import shoot

PHONE = {"width": 375, "height": 900}

# Controls a person can see and fill (hidden inputs and buttons carry their own text), without a name.
UNLABELLED_CONTROLS = """() => Array.from(document.querySelectorAll("input, select, textarea"))
  .filter(el => el.type !== "hidden" && el.getClientRects().length > 0)
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute("aria-label")
                && !el.getAttribute("aria-labelledby"))
  .map(el => el.outerHTML.slice(0, 120))"""

# The elements sticking out on the right, to say which one overflows when one does.
WIDER_THAN_WINDOW = """() => Array.from(document.querySelectorAll("body *"))
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map(el => `${el.tagName.toLowerCase()}.${el.className}`).slice(0, 8)"""


def look(page, name: str) -> None:
    """Assert the page reads at 375 px and labels its controls, then screenshot it at 375 and 1440 px."""
    original = page.viewport_size
    page.set_viewport_size(PHONE)
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name}: {overflow} px wider than 375 px: {page.evaluate(WIDER_THAN_WINDOW)}"
    assert page.evaluate(UNLABELLED_CONTROLS) == [], f"{name}: controls without a label"
    page.set_viewport_size(original)
    shoot(page, name)


def sign_in(page, email: str) -> None:
    """Sign `email` in through the login form (with the factories' password) and wait for the next page."""
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(factories.PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
