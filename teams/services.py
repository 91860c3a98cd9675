"""Team changes: invites (send, cancel, accept), roles, removals, and members' personal API keys.

Changes that count something (seats, owners) lock the organization's row first, so concurrent
requests of one organization run one after the other and each sees the previous one's result. The
caller's role is read again under that lock: a request authenticated a moment before a demotion or a
removal must not act with the role it no longer has.
"""

from dataclasses import dataclass
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from accounts import services as accounts_services
from accounts.credentials import digest, new_url_token
from accounts.gates import owner_email_verified
from accounts.models import Organization, OrgScopedQuerySet, Role, User, normalize_email
from accounts.plans import get_plan
from audit.models import AuditEvent
from audit.services import audit_write
from core.errors import (
    AlreadyMember,
    CannotRemoveSelf,
    EmailNotVerified,
    EmailTaken,
    Forbidden,
    InviteInvalid,
    LastOwner,
    NotFound,
    PlanRequired,
    SeatLimitReached,
)
from teams import emails
from teams.models import INVITE_LIFETIME, Invite
from teams.selectors import MANAGERS, key_holder, seats_taken


@dataclass(frozen=True)
class AcceptedInvite:
    user: User
    token: str  # a session JWT of the new member


def invite_send(*, org: Organization, inviter: User, email: str, role: str) -> Invite:
    """Invite `email` into `org` as `role` (user or admin) and mail the link; an older pending invite of
    the same email expires.

    Raises Forbidden (the inviter is no owner or admin), PlanRequired (admin role below Growth),
    EmailNotVerified (the owner's email), AlreadyMember, SeatLimitReached (members + pending invites).
    """
    email = normalize_email(email)
    with transaction.atomic():
        org = _lock_org(org.pk)
        members = User.objects.for_org(org)
        _require_role(members, inviter, MANAGERS)
        if role == Role.ADMIN and not get_plan(org.plan).admin_role:
            raise PlanRequired("The admin role needs the Growth plan or above.")
        if not owner_email_verified(org):
            raise EmailNotVerified()
        if members.filter(email=email).exists():
            raise AlreadyMember()
        _require_seat(org, taken=seats_taken(org=org, except_invites_for=email))
        now = timezone.now()
        Invite.objects.for_org(org).pending(now).filter(email=email).update(expires_at=now)  # spec, States: Invite
        token = new_url_token()
        invite = Invite.objects.create(org=org, email=email, role=role, inviter=inviter, digest=digest(token),
                                       created_at=now, expires_at=now + INVITE_LIFETIME)
        audit_write(org=org, type=AuditEvent.Type.TEAM_INVITE_SENT,
                    metadata={"actor_id": str(inviter.pk), "invite_id": str(invite.pk), "email": email, "role": role})
    emails.invite_email_send(invite=invite, token=token)  # after commit: never mail a rolled-back invite
    return invite


def invite_cancel(*, org: Organization, actor: User, invite_id: UUID) -> None:
    """Delete a pending invite of `org`; its link stops working at once.

    Raises Forbidden (the actor is no owner or admin), NotFound (unknown, another organization's, or
    no longer pending).
    """
    with transaction.atomic():
        _require_role(User.objects.for_org(org), actor, MANAGERS)
        invite = Invite.objects.for_org(org).pending().filter(pk=invite_id).first()
        # A conditional DELETE: an accept that commits in between wins, and this is a 404.
        if invite is None or Invite.objects.pending().filter(pk=invite.pk).delete()[0] == 0:
            raise NotFound()
        audit_write(org=org, type=AuditEvent.Type.TEAM_INVITE_CANCELLED,
                    metadata={"actor_id": str(actor.pk), "invite_id": str(invite.pk), "email": invite.email,
                              "role": invite.role})


def invite_accept(*, token: str, password: str) -> AcceptedInvite:
    """Create the invited member (the invited role, email verified) and a session for them. Single-use.

    Raises InviteInvalid (unknown, expired, cancelled or already accepted), AlreadyMember (the email is
    a member of the organization), EmailTaken (it has an account in another one), SeatLimitReached.
    """
    with transaction.atomic():
        invite = Invite.objects.filter(digest=digest(token)).first()
        if invite is None:
            raise InviteInvalid()
        org = _lock_org(invite.org_id)
        now = timezone.now()
        # A conditional UPDATE makes the invite single-use under concurrency; an error below rolls it back.
        if Invite.objects.pending(now).filter(pk=invite.pk).update(accepted_at=now) != 1:
            raise InviteInvalid()
        # Across organizations on purpose: an email has one account in the whole service.
        existing = User.objects.filter(email=invite.email).first()
        if existing is not None:
            raise AlreadyMember() if existing.org_id == org.pk else EmailTaken()
        _require_seat(org, taken=User.objects.for_org(org).count())  # the plan may have shrunk since
        user = accounts_services.member_create(org=org, email=invite.email, password=password, role=invite.role)
        audit_write(org=org, type=AuditEvent.Type.TEAM_INVITE_ACCEPTED,
                    metadata={"actor_id": str(user.pk), "invite_id": str(invite.pk), "user_id": str(user.pk),
                              "email": user.email, "role": user.role})
    return AcceptedInvite(user=user, token=accounts_services.session_token_for(user))


def member_role_change(*, org: Organization, actor: User, member_id: UUID, role: str) -> User:
    """Give a member of `org` a new role; only owners may. Ownership moves by promoting another member
    to owner, who then demotes the former one (or that one steps down).

    Raises Forbidden (the actor is no owner), NotFound (no member of `org`), LastOwner (it would leave
    the organization without an owner).
    """
    with transaction.atomic():
        # Locked so that two concurrent demotions cannot each see the other owner and leave none.
        org = _lock_org(org.pk)
        members = User.objects.for_org(org)
        _require_role(members, actor, (Role.OWNER,))
        member = _member(members, member_id)
        previous = member.role
        if previous == role:
            return member
        if _is_last_owner(members, member):
            raise LastOwner()
        accounts_services.member_role_set(member=member, role=role)
        audit_write(org=org, type=AuditEvent.Type.TEAM_ROLE_CHANGED,
                    metadata={"actor_id": str(actor.pk), "user_id": str(member.pk), "email": member.email,
                              "previous_role": previous, "role": role})
    return member


def member_remove(*, org: Organization, actor: User, member_id: UUID) -> None:
    """Remove a member of `org`: owners remove anyone else, admins only users. The member's sessions and
    personal keys stop working at once (the user row is deleted).

    Raises Forbidden (the actor's role), NotFound (no member of `org`), LastOwner (the only owner
    removing themselves), CannotRemoveSelf (anyone else removing themselves).
    """
    with transaction.atomic():
        org = _lock_org(org.pk)
        members = User.objects.for_org(org)
        actor_role = _require_role(members, actor, MANAGERS)
        member = _member(members, member_id)
        # Another owner is never the last one: the actor, read under the lock, is an owner too.
        if member.pk == actor.pk:
            raise LastOwner() if _is_last_owner(members, member) else CannotRemoveSelf()
        if actor_role == Role.ADMIN and member.role != Role.USER:
            raise Forbidden("Admins may remove only members with the user role.")
        audit_write(org=org, type=AuditEvent.Type.TEAM_MEMBER_REMOVED,
                    metadata={"actor_id": str(actor.pk), "user_id": str(member.pk), "email": member.email,
                              "role": member.role})
        accounts_services.member_delete(member=member)


def member_api_key_create(*, org: Organization, actor: User, member_id: UUID) -> accounts_services.CreatedApiKey:
    """A new personal API key of a member of `org`: users for themselves, owners and admins for anyone.

    Raises NotFound (no member of `org`), Forbidden, ValidationFailed (the organization's key cap).
    """
    member = key_holder(org=org, actor=actor, member_id=member_id)
    return accounts_services.personal_api_key_create(org=org, user=member, created_by=actor)


def member_api_key_revoke(*, org: Organization, actor: User, member_id: UUID, key_id: UUID) -> None:
    """Revoke a member's personal API key, effective on the next request: users their own, owners and
    admins anyone's. Raises NotFound (no member of `org`, or no active key of that member), Forbidden."""
    member = key_holder(org=org, actor=actor, member_id=member_id)
    accounts_services.personal_api_key_revoke(org=org, user=member, key_id=key_id)


def _lock_org(org_id: UUID) -> Organization:
    """The organization's row, locked until the transaction ends (and read fresh: the plan may have changed)."""
    return Organization.objects.select_for_update().get(pk=org_id)


def _require_role(members: OrgScopedQuerySet, actor: User, roles: tuple[str, ...]) -> str:
    """The actor's role as stored now; Forbidden unless it is one of `roles` (or the actor is gone)."""
    role = members.filter(pk=actor.pk).values_list("role", flat=True).first()
    if role not in roles:
        raise Forbidden(f"This needs the role {' or '.join(roles)}.")
    return role


def _member(members: OrgScopedQuerySet, member_id: UUID) -> User:
    member = members.filter(pk=member_id).first()
    if member is None:
        raise NotFound()
    return member


def _is_last_owner(members: OrgScopedQuerySet, member: User) -> bool:
    return member.role == Role.OWNER and members.filter(role=Role.OWNER).count() == 1


def _require_seat(org: Organization, *, taken: int) -> None:
    """SeatLimitReached unless one more seat fits the plan's max_members (None: unlimited)."""
    limit = get_plan(org.plan).max_members
    if limit is not None and taken + 1 > limit:
        raise SeatLimitReached(f"The {org.plan} plan has {limit} seats, pending invites included.")
