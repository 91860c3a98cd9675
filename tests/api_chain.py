"""The test client runs the middleware chain production runs: API_MIDDLEWARE for /v1/, MIDDLEWARE otherwise.

Django's test client builds one chain from settings.MIDDLEWARE, while config/wsgi.py serves /v1/ through
core.api_chain.ApiHandler. Each client handler (Django's, DRF's, pytest-django's) builds both chains once
and picks one per request by path, as `split_by_path` does; one handler instance, so DRF's
force_authenticate and the client's cookies behave as before.
"""

from django.test.client import ClientHandler

from core.api_chain import api_middleware_as_settings, is_api_path

_CHAIN_ATTRIBUTES = ("_view_middleware", "_template_response_middleware", "_exception_middleware",
                     "_middleware_chain")
_stock_call = ClientHandler.__call__


def _chain_of(handler) -> tuple:
    return tuple(getattr(handler, name) for name in _CHAIN_ATTRIBUTES)


def _split_call(self, environ):
    chains = self.__dict__.get("_pages_and_api_chains")
    if chains is None:
        self.load_middleware()
        pages = _chain_of(self)
        with api_middleware_as_settings():
            self.load_middleware()
        chains = self._pages_and_api_chains = (pages, _chain_of(self))
    for name, value in zip(_CHAIN_ATTRIBUTES, chains[is_api_path(environ.get("PATH_INFO", ""))], strict=True):
        setattr(self, name, value)
    return _stock_call(self, environ)


def split_test_client_chains() -> None:
    """Make every test client handler pick its chain by path (idempotent)."""
    ClientHandler.__call__ = _split_call
