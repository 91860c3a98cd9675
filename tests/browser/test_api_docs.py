"""/v1/docs in a real browser with every other origin cut off: Swagger UI comes from our own static files
and lists the operations, with no inline script blocked by the Content-Security-Policy."""

from urllib.parse import urlsplit

import pytest

from tests.browser.screenshots import shoot

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_api_docs_render_their_operations_without_any_other_origin(page, live_server):
    own = urlsplit(live_server.url).netloc
    elsewhere: list[str] = []

    def only_our_origin(route):
        if urlsplit(route.request.url).netloc == own:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_our_origin)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto("/v1/docs")
    page.wait_for_selector(".opblock", timeout=20_000)
    assert page.locator(".opblock").count() > 40  # every operation of the API
    assert "/v1/sign" in page.inner_text("#swagger-ui")
    shoot(page, "api-docs")
    assert elsewhere == [] and violations == []
