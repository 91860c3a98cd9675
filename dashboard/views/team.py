"""Team: members with roles, invites, role changes and removals. Who may do what is decided by
`teams.services`, as for /v1/team; the page only leaves out buttons a role cannot use."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from accounts.models import Role
from accounts.selectors import personal_api_keys
from dashboard.access import action_lives_on, member_page
from dashboard.forms import InviteForm, RoleForm
from dashboard.views.api_keys import key_created_redirect
from teams import selectors, services


@require_safe
@member_page
def team_page(request):
    return _team_page(request)


def _team_page(request, invite_form: InviteForm | None = None, status: int = 200):
    is_manager = request.user.role in selectors.MANAGERS
    return render(request, "dashboard/team.html", {
        "team": selectors.member_list(org=request.org),
        # Like GET /v1/team/invites: owners and admins only.
        "invites": selectors.pending_invites(org=request.org) if is_manager else [],
        "is_manager": is_manager, "is_owner": request.user.role == Role.OWNER,
        "invite_form": invite_form or InviteForm(), "role_form": RoleForm()}, status=status)


@require_http_methods(["GET", "POST"])
@member_page
def invite_send(request):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:team", "Send an invite with the form on this page.")
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _team_page(request, invite_form=form, status=400)
    invite = services.invite_send(org=request.org, inviter=request.user, **form.cleaned_data)
    messages.success(request, f"Invite sent to {invite.email}; it is valid for 7 days.")
    return redirect("dashboard:team")


@require_http_methods(["GET", "POST"])
@member_page
def invite_cancel(request, invite_id):
    if request.method == "POST":
        services.invite_cancel(org=request.org, actor=request.user, invite_id=invite_id)
        messages.success(request, "The invite is cancelled; its link no longer works.")
        return redirect("dashboard:team")
    invite = selectors.pending_invite_get(org=request.org, actor=request.user, invite_id=invite_id)
    return render(request, "dashboard/confirm.html", {
        "title": f"Cancel the invite of {invite.email}?", "body": "Its link stops working at once.",
        "button": "Cancel the invite", "cancel": "dashboard:team"})


@require_http_methods(["GET", "POST"])
@member_page
def member_role_change(request, user_id):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:team", "Change roles with the forms on this page.")
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _team_page(request, status=400)
    member = services.member_role_change(org=request.org, actor=request.user, member_id=user_id,
                                         role=form.cleaned_data["role"])
    messages.success(request, f"{member.email} is now {member.role}.")
    return redirect("dashboard:team")


@require_http_methods(["GET", "POST"])
@member_page
def member_remove(request, user_id):
    if request.method == "POST":
        services.member_remove(org=request.org, actor=request.user, member_id=user_id)
        messages.success(request, "The member is removed; their sessions and personal keys stopped working.")
        return redirect("dashboard:team")
    member = selectors.member_get(org=request.org, member_id=user_id)
    return render(request, "dashboard/confirm.html", {
        "title": f"Remove {member.email}?",
        "body": "They lose access at once, and their personal API keys stop working.",
        "button": "Remove the member", "cancel": "dashboard:team"})


@require_http_methods(["GET", "POST"])
@member_page
def member_keys(request, user_id):
    """A member's personal API keys: users see and make their own, owners and admins anyone's."""
    if request.method == "POST":
        created = services.member_api_key_create(org=request.org, actor=request.user, member_id=user_id)
        return key_created_redirect(request, created)
    member = selectors.key_holder(org=request.org, actor=request.user, member_id=user_id)
    keys = personal_api_keys(org=request.org, user=member)
    return render(request, "dashboard/member_keys.html", {"member": member, "keys": keys})


@require_http_methods(["GET", "POST"])
@member_page
def member_key_revoke(request, user_id, key_id):
    if request.method == "POST":
        services.member_api_key_revoke(org=request.org, actor=request.user, member_id=user_id, key_id=key_id)
        messages.success(request, "The key is revoked.")
        return redirect("dashboard:member-keys", user_id=user_id)
    member = selectors.key_holder(org=request.org, actor=request.user, member_id=user_id)
    return render(request, "dashboard/confirm.html", {
        "title": f"Revoke a personal key of {member.email}?", "body": "It stops working at once.",
        "button": "Revoke the key", "cancel": "dashboard:team"})
