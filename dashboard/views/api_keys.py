"""Organization API keys (owners and admins create and revoke, as on /v1/api-keys) and the signed-in
member's personal keys (as on /v1/team/members/:id/api-keys).

A new key is made by a POST that redirects to its page, which shows the value once (dashboard.reveal):
reloading that page, or going Back to it, makes no second key and shows the value no more.
"""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe

from accounts import selectors, services
from accounts.models import Role
from core.errors import NotFound
from dashboard.access import action_lives_on, member_page
from dashboard.forms import ApiKeyCreateForm
from dashboard.reveal import secret_keep, secret_take
from teams import services as team_services

MANAGERS = (Role.OWNER, Role.ADMIN)


@require_safe
@member_page
def api_keys_page(request):
    return _keys_page(request)


def _keys_page(request, form: ApiKeyCreateForm | None = None, status: int = 200):
    context = {
        "keys": selectors.organization_api_keys(org=request.org),
        "personal_keys": selectors.personal_api_keys(org=request.org, user=request.user),
        "form": form or ApiKeyCreateForm(), "can_manage": request.user.role in MANAGERS}
    return render(request, "dashboard/api_keys.html", context, status=status)


@require_http_methods(["GET", "POST"])
@member_page(roles=MANAGERS)
def api_key_create(request):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:api-keys", "Create a key with the form on this page.")
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return _keys_page(request, form=form, status=400)
    created = services.api_key_create(org=request.org, created_by=request.user, name=form.cleaned_data["name"])
    return key_created_redirect(request, created)


def key_created_redirect(request, created: services.CreatedApiKey):
    """After the POST that made a key: keep its value for one showing, and send the browser to its page."""
    secret_keep(request, object_id=created.api_key.pk, secret=created.key)
    return redirect("dashboard:api-key-created", key_id=created.api_key.pk)


@require_safe
@never_cache  # nothing keeps the value: no disk cache, no back-forward cache
@member_page
def api_key_created(request, key_id):
    """The new key's value, the first time this page opens after the POST; afterwards, that it was shown."""
    key = selectors.api_key_made_by(org=request.org, user=request.user, key_id=key_id)
    # A HEAD shows nothing, so it must not use up the one showing.
    value = secret_take(request, object_id=key.pk) if request.method == "GET" else None
    return render(request, "dashboard/key_created.html", {"key": key, "value": value, "holder": key.user})


@require_http_methods(["GET", "POST"])
@member_page(roles=MANAGERS)
def api_key_revoke(request, key_id):
    key = _active_key(selectors.organization_api_keys(org=request.org), key_id)
    if request.method == "POST":
        services.api_key_revoke(org=request.org, key_id=key.pk)
        messages.success(request, f"Key {key.preview} is revoked.")
        return redirect("dashboard:api-keys")
    return render(request, "dashboard/confirm.html", {
        "title": f"Revoke key {key.preview}?",
        "body": "Programs using it are refused from their next request. This cannot be undone.",
        "button": "Revoke the key", "cancel": "dashboard:api-keys"})


@require_http_methods(["GET", "POST"])
@member_page
def personal_key_create(request):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:api-keys", "Create a personal key with the button on this page.")
    created = team_services.member_api_key_create(org=request.org, actor=request.user, member_id=request.user.pk)
    return key_created_redirect(request, created)


@require_http_methods(["GET", "POST"])
@member_page
def personal_key_revoke(request, key_id):
    key = _active_key(selectors.personal_api_keys(org=request.org, user=request.user), key_id)
    if request.method == "POST":
        team_services.member_api_key_revoke(org=request.org, actor=request.user, member_id=request.user.pk,
                                            key_id=key.pk)
        messages.success(request, f"Your key {key.preview} is revoked.")
        return redirect("dashboard:api-keys")
    return render(request, "dashboard/confirm.html", {
        "title": f"Revoke your key {key.preview}?", "body": "It stops working at once. This cannot be undone.",
        "button": "Revoke the key", "cancel": "dashboard:api-keys"})


def _active_key(keys: list, key_id):
    # At most MAX_ACTIVE_KEYS_PER_ORG keys: the confirmation page reads the same list as the page.
    for key in keys:
        if key.pk == key_id:
            return key
    raise NotFound("No such active key.")
