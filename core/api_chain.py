"""The JSON API under /v1/ runs a shorter middleware chain than the pages.

Sessions, CSRF, the session user and messages serve the dashboard and the admin; the API authenticates
every request itself (bearer credentials, no cookies) and never reads a session, so for /v1/ those
layers only cost time (docs/architecture.md, "Where we step around Django"). Both chains come from
settings: MIDDLEWARE for the pages, API_MIDDLEWARE for the API. Django builds a handler's chain from
settings.MIDDLEWARE alone, so the API handler lends it API_MIDDLEWARE while it builds its own.
"""

import contextlib
from collections.abc import Callable, Iterator

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

API_PREFIX = "/v1/"
# load_middleware reading settings.MIDDLEWARE is Django's internal behaviour: tested on these releases.
TESTED_VERSIONS = {"django": ("5.2",)}


def is_api_path(path: str) -> bool:
    """Whether a request to `path` runs the API's chain."""
    return path.startswith(API_PREFIX)


@contextlib.contextmanager
def api_middleware_as_settings() -> Iterator[None]:
    """settings.MIDDLEWARE reads as settings.API_MIDDLEWARE inside the block."""
    pages_middleware = settings.MIDDLEWARE
    settings.MIDDLEWARE = settings.API_MIDDLEWARE
    try:
        yield
    finally:
        settings.MIDDLEWARE = pages_middleware


class ApiHandler(WSGIHandler):
    """Django's WSGI handler with settings.API_MIDDLEWARE as its chain."""

    def load_middleware(self, is_async: bool = False) -> None:
        with api_middleware_as_settings():
            super().load_middleware(is_async)


def split_by_path(pages: Callable, api: Callable) -> Callable:
    """A WSGI app sending /v1/... to `api` and everything else to `pages`."""

    def application(environ, start_response):
        handler = api if is_api_path(environ.get("PATH_INFO", "")) else pages
        return handler(environ, start_response)

    return application
