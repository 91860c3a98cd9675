"""The WSGI application: the JSON API under /v1/ runs a shorter middleware chain than the pages.

Sessions, CSRF, the session user, messages and frame options serve the dashboard and the admin;
the API authenticates every request itself (bearer credentials, no cookies) and never reads a
session, so for /v1/ those five layers only cost time (about 0.3 ms a request, docs/performance.md).
Both chains come from settings: MIDDLEWARE for the pages, API_MIDDLEWARE for the API.
"""

import os

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

from core.body_timeout import with_body_timeouts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

API_PREFIX = "/v1/"


class ApiHandler(WSGIHandler):
    """Django's WSGI handler with settings.API_MIDDLEWARE as its chain."""

    def load_middleware(self, is_async=False):
        pages_middleware = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = pages_middleware


def split_by_path(pages, api):
    """A WSGI app sending /v1/... to `api` and everything else to `pages`."""

    def application(environ, start_response):
        handler = api if environ.get("PATH_INFO", "").startswith(API_PREFIX) else pages
        return handler(environ, start_response)

    return application


application = with_body_timeouts(split_by_path(get_wsgi_application(), ApiHandler()))
