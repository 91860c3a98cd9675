"""CORS for the public, credential-free routes, so a web page or a browser extension can call them.

Only views that inherit `PublicCors` answer CORS: verification, soft-binding resolution, record fetch and
its C2PA export, public keys, plans and the transparency log. Every other route sends no CORS header at
all, so a browser keeps other origins' scripts away from anything that takes a credential (and those
routes answer a credential-free preflight 401 as before, which the browser treats as a refusal).

`Access-Control-Allow-Origin: *` on every response of these routes, errors included (a page should read a
429's `Retry-After`), and never `Access-Control-Allow-Credentials`: browsers then send no cookie and no
`Authorization`, and these routes read neither. A preflight (OPTIONS with `Origin` and
`Access-Control-Request-Method`) gets the route's usual OPTIONS answer (200, `Allow`, the methods as JSON;
docs/decisions.md, "OPTIONS") plus the methods, request headers and max age, and is not counted against
the caller's rate limit: it does no work, and a cached one is not sent again for `MAX_AGE` seconds.
"""

ALLOW_ORIGIN = "*"
# What a page may send besides the CORS-safelisted headers: a JSON or raw body's type, and its own request id.
ALLOW_HEADERS = ("Content-Type", "X-Request-Id")
# What a page may read besides the safelisted ones (Content-Type, Cache-Control, ...): rate-limit state
# and the request id to quote in a support request.
EXPOSE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-Id")
MAX_AGE = 86400  # seconds; browsers cap it lower (Chromium at 2 hours)


def is_preflight(request) -> bool:
    return (request.method == "OPTIONS" and "Origin" in request.headers
            and "Access-Control-Request-Method" in request.headers)


class PublicCors:
    """Mixin for a public APIView (before APIView in the bases): CORS headers on each of its responses."""

    def check_throttles(self, request) -> None:
        if not is_preflight(request):
            super().check_throttles(request)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = ALLOW_ORIGIN
        response["Access-Control-Expose-Headers"] = ", ".join(EXPOSE_HEADERS)
        if is_preflight(request):
            response["Access-Control-Allow-Methods"] = ", ".join(self.allowed_methods)
            response["Access-Control-Allow-Headers"] = ", ".join(ALLOW_HEADERS)
            response["Access-Control-Max-Age"] = str(MAX_AGE)
        return response
