"""Who may open a page, and how a refused action looks: the dashboard's counterpart of the API's
authentication, permission and throttle classes.

Pages sign in with Django's session (not the API's JWT). A member's page acts for the member's
organization (`request.org`), counts against the plan's per-minute limit on the same counter as the
API (`billing.throttles.plan_rate_hit`), and checks roles exactly where the API's permission classes
do; every other rule is the services' own. Public forms (login, signup, password reset, invite,
verify) count per client IP on the API's counters. A domain error (`ApiError`) nobody handled becomes
an error page with the API's status code.
"""

import functools
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from billing.throttles import plan_rate_hit
from core.errors import ApiError, Forbidden, RateLimited, RequestTimeout
from core.ratelimit import WindowState
from core.throttles import AuthIpThrottle, VerifyIpThrottle
from core.uploads import limit_uploads


def error_page(request: HttpRequest, error: ApiError) -> HttpResponse:
    """The error page of a refused action, with the status (and headers, e.g. Retry-After) the API sends."""
    context = {"error": error}
    if error.status_code == 402:
        context["billing"] = True
    response = render(request, "dashboard/error.html", context, status=error.status_code)
    for name, value in error.headers.items():
        response[name] = value
    return response


def _answered(request: HttpRequest, view: Callable, *args, **kwargs) -> HttpResponse | None:
    """The view's response, or the error page of the domain error it raised."""
    try:
        return view(request, *args, **kwargs)
    except RequestTimeout:
        raise  # a stalled body: core.body_timeout answers it, as on every other route
    except ApiError as error:
        return error_page(request, error)


def _refused(request: HttpRequest, state: WindowState | None) -> HttpResponse | None:
    if state is None:
        return None
    request.ratelimit_state = state  # X-RateLimit-* headers (core.middleware)
    if state.allowed:
        return None
    return error_page(request, RateLimited(headers={"Retry-After": str(state.reset_in)}))


def member_page(view: Callable | None = None, *, roles: tuple[str, ...] = ()) -> Callable:
    """A page for a signed-in member; `roles`: the roles the API's HasRole asks for this action."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            request.org = request.user.org
            if refused := _refused(request, plan_rate_hit(request.org)):
                return refused
            if roles and request.user.role not in roles:
                return error_page(request, Forbidden(f"This needs the role {' or '.join(roles)}."))
            return _answered(request, view, *args, **kwargs)

        return wrapped

    return decorate(view) if view is not None else decorate


def public_form(view: Callable | None = None, *, throttle: type = AuthIpThrottle) -> Callable:
    """A page anyone may submit: each POST counts against the API's per-IP limit for the same action."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method == "POST" and (refused := _refused(request, throttle().count(request))):
                return refused
            return _answered(request, view, *args, **kwargs)

        return wrapped

    return decorate(view) if view is not None else decorate


def verification_form(view: Callable) -> Callable:
    """The public verify page: limited per IP like POST /v1/verify."""
    return public_form(view, throttle=VerifyIpThrottle)


def upload_form(max_bytes: int) -> Callable:
    """A page taking one file of at most `max_bytes`: the limit is set before anything reads the body.

    Django's CSRF check reads the body before the view runs, so the check is made here, after the
    limit is in place (Django's documented pattern for changing upload handlers in a view).
    """

    def decorate(view: Callable) -> Callable:
        protected = csrf_protect(view)

        @csrf_exempt
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            limit_uploads(request, max_bytes)
            if request.method == "POST" and (refused := _answered(request, _parse_body)):
                return refused  # over the limit: the 413 page
            return protected(request, *args, **kwargs)

        return wrapped

    return decorate


def _parse_body(request: HttpRequest) -> None:
    request.POST  # noqa: B018 (reading it parses the body, here under the upload limit)


def action_lives_on(request: HttpRequest, where: str, message: str, **url_kwargs) -> HttpResponse:
    """The answer to a GET on an address that only takes a form's POST (typed, bookmarked, reached with
    Back): the page where that action lives, with a message saying so. Nothing is done."""
    messages.info(request, message)
    return redirect(where, **url_kwargs)


def no_dead_end(view: Callable, *, home: str) -> Callable:
    """`view`, except that a 405 it gives a GET or HEAD becomes a redirect to `home` with a message: the
    safety net under every page, so no address a person can open answers "method not allowed"."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and request.method in ("GET", "HEAD"):
            return action_lives_on(request, home, "That address takes a form; here is where it lives.")
        return response

    return wrapped
