"""Reads of the team domain: the member list, the seats in use, and the public invite lookup."""

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from accounts.credentials import digest
from accounts.models import Organization, Role, User
from accounts.plans import get_plan
from core.errors import Forbidden, NotFound
from teams.models import Invite

MANAGERS = (Role.OWNER, Role.ADMIN)  # invite, remove users, manage anyone's personal keys


@dataclass(frozen=True)
class MemberList:
    members: QuerySet[User]  # each with `api_key_count`
    plan: str
    max_members: int | None  # None: unlimited
    admin_role: bool


def member_list(*, org: Organization) -> MemberList:
    """The organization's members, oldest first, with their plan's seat limit and admin-role flag.

    Each member carries `api_key_count` (active personal keys) from one annotated query, so the list
    costs one query whatever its length.
    """
    active_keys = Count("personal_api_keys", filter=Q(personal_api_keys__revoked_at__isnull=True))
    members = User.objects.for_org(org).annotate(api_key_count=active_keys).order_by("created_at", "pk")
    plan = get_plan(org.plan)
    return MemberList(members=members, plan=plan.name, max_members=plan.max_members, admin_role=plan.admin_role)


def member_get(*, org: Organization, member_id) -> User:
    """One member of the organization. Raises NotFound (also for another organization's user)."""
    member = User.objects.for_org(org).filter(pk=member_id).first()
    if member is None:
        raise NotFound("No such member.")
    return member


def key_holder(*, org: Organization, actor: User, member_id) -> User:
    """The member whose personal API keys `actor` may see and manage: themselves, or anyone for owners
    and admins. Raises NotFound (no member of `org`), Forbidden."""
    member = member_get(org=org, member_id=member_id)
    if member.pk != actor.pk and actor.role not in MANAGERS:
        raise Forbidden("Only owners and admins manage another member's keys.")
    return member


def seats_taken(*, org: Organization, except_invites_for: str | None = None) -> int:
    """Seats counted against the plan's max_members: members plus pending invites.

    `except_invites_for`: an email whose pending invite is being replaced, so it does not count twice.
    """
    invites = Invite.objects.for_org(org).pending()
    if except_invites_for is not None:
        invites = invites.exclude(email=except_invites_for)
    return User.objects.for_org(org).count() + invites.count()


def public_invite_lookup(*, token: str) -> Invite:
    """The pending invite an emailed token names, with its organization (public: the token is the credential).

    Raises NotFound for an unknown, expired, cancelled (deleted) or accepted invite.
    """
    invite = Invite.objects.pending().select_related("org").filter(digest=digest(token)).first()
    if invite is None:
        raise NotFound("This invite is unknown, expired, cancelled or already accepted.")
    return invite


def pending_invites(*, org: Organization) -> list[Invite]:
    """The organization's pending invites, newest first (what GET /v1/team/invites lists)."""
    return list(Invite.objects.for_org(org).pending().order_by("-created_at"))


def pending_invite_get(*, org: Organization, actor: User, invite_id) -> Invite:
    """One pending invite of `org`, for an owner or admin (who alone see invites). Raises Forbidden,
    NotFound (unknown, another organization's, or no longer pending)."""
    if actor.role not in MANAGERS:
        raise Forbidden("Only owners and admins see invites.")
    invite = Invite.objects.for_org(org).pending().filter(pk=invite_id).first()
    if invite is None:
        raise NotFound("No such pending invite.")
    return invite
