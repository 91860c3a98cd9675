"""The page behind the emailed invite link (addendum section 2): it shows the invite and completes it.

It acts on POST only: mail scanners open links with GET, which must not use up the invite. Accepting
signs the new member in (the dashboard's session) and lands on the dashboard, like signing up does.
"""

from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.serializers import PASSWORD_MAX, PASSWORD_MIN
from accounts.views import new_password_problem
from core.errors import ApiError, NotFound
from teams import selectors, services


@require_http_methods(["GET", "POST"])
def accept_invite_page(request, token: str):
    context = {"min_length": PASSWORD_MIN, "max_length": PASSWORD_MAX}
    try:
        context["invite"] = selectors.public_invite_lookup(token=token)
    except NotFound:
        return render(request, "teams/accept_invite.html", {"invalid": True}, status=404)
    if request.method == "POST":
        if problem := new_password_problem(request.POST):
            context["error"] = problem
        else:
            try:
                member = services.invite_accept(token=token, password=request.POST["password"]).user
            except ApiError as error:
                context["error"] = error.message
            else:
                # A new session key: whoever was signed in on this browser before is signed out.
                login(request, member, backend="django.contrib.auth.backends.ModelBackend")
                messages.success(request, f"Welcome to {member.org.name}: you joined as {member.role}.")
                return redirect("dashboard:overview")
    return render(request, "teams/accept_invite.html", context, status=400 if context.get("error") else 200)
