"""Server-rendered pages for the emailed links. They call the same services as the API.

Both act on POST only: mail scanners open links with GET, which must not burn single-use tokens.
"""

from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts import services
from accounts.serializers import PASSWORD_MAX, PASSWORD_MIN
from core.errors import ApiError


def new_password_problem(form) -> str | None:
    """What is wrong with a page's `password` and `password_confirm` fields, or None."""
    password = form.get("password", "")
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return f"The password needs {PASSWORD_MIN} to {PASSWORD_MAX} characters."
    if password != form.get("password_confirm", ""):
        return "The two passwords differ."
    return None


@require_http_methods(["GET", "POST"])
def verify_email_page(request):
    token = request.POST.get("token") or request.GET.get("token", "")
    context = {"token": token}
    if request.method == "POST":
        try:
            services.email_verify(token=token[:200])
            context["done"] = True
        except ApiError as error:
            context["error"] = error.message
    return render(request, "accounts/verify_email.html", context)


@require_http_methods(["GET", "POST"])
def reset_password_page(request):
    token = request.POST.get("token") or request.GET.get("token", "")
    context = {"token": token, "min_length": PASSWORD_MIN}
    if request.method == "POST":
        password = request.POST.get("password", "")
        if problem := new_password_problem(request.POST):
            context["error"] = problem
        else:
            try:
                services.password_reset(token=token[:200], password=password)
                context["done"] = True
            except ApiError as error:
                context["error"] = error.message
    return render(request, "accounts/reset_password.html", context)
