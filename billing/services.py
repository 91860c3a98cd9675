"""State changes of billing: plan changes and counting signatures against the plan's allowance."""

from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.emails import templated_email_send
from accounts.models import Organization, Role, User
from accounts.plans import BILLING_INTERVALS, PLANS, get_plan, upgrade_url
from accounts.services import organization_plan_set
from audit.models import AuditEvent
from audit.services import audit_write
from billing.models import PlanRequest, UsageCounter
from billing.periods import period_start
from billing.selectors import signatures_used_this_month
from core.errors import Forbidden, NotFound, SignatureLimitReached, ValidationFailed
from webhooks.events import event_emit

QUOTA_WARNING_FRACTION = 0.8  # spec: quota.warning when usage crosses 80% of the plan limit


@dataclass(frozen=True)
class UsageAfter:
    used_before: int
    used_after: int
    # quota.warning / quota.limit (kind, data) this count crossed: the caller emits them with its own
    # events, so one action makes one delivery round.
    events: tuple[tuple[str, dict], ...] = ()


def plan_change(*, org: Organization, plan: str, billing_interval: str | None = None, actor: str = "") -> Organization:
    """Move an organization to `plan` (and optionally `billing_interval`), writing audit `billing.plan_changed`
    with `actor` (who asked: a staff email, or the command). ValueError for unknown values.

    A new plan re-arms this period's quota.limit announcement: the one made under the old allowance
    said nothing about the new one.
    """
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}")
    if billing_interval is not None and billing_interval not in BILLING_INTERVALS:
        raise ValueError(f"unknown billing interval {billing_interval!r}")
    with transaction.atomic():
        before = Organization.objects.select_for_update().values("plan", "billing_interval").get(pk=org.pk)
        fields = {"plan": plan, "billing_interval": billing_interval or before["billing_interval"]}
        organization_plan_set(org=org, **fields)
        if plan != before["plan"]:
            UsageCounter.objects.filter(org=org, period_start=period_start(timezone.now())).update(
                limit_announced=False)
        audit_write(org=org, type=AuditEvent.Type.PLAN_CHANGED,
                    metadata={**fields, "previous_plan": before["plan"],
                              "previous_billing_interval": before["billing_interval"], "actor": actor})
    for name, value in fields.items():
        setattr(org, name, value)
    return org


def usage_consume(*, org: Organization, count: int) -> UsageAfter:
    """Count `count` signatures for this month; call inside the transaction that stores them.

    One conditional UPDATE both checks the free plan's allowance and counts, so concurrent signers
    can never pass the limit together. Call it last in the transaction: the counter row stays locked
    only until the commit. Raises SignatureLimitReached (nothing counted) when a blocking plan's
    allowance would be exceeded: the caller, once its transaction is rolled back, calls
    `usage_refused`. The result lists the quota events this call crossed (80% / 100%).
    """
    plan = get_plan(org.plan)
    period = period_start(timezone.now())
    cap = plan.included_signatures if plan.blocks_at_limit else None
    used_after = _increment(org, period, count, cap)
    if used_after is None:
        _ensure_counter(org, period)
        used_after = _increment(org, period, count, cap)
    if used_after is None:
        raise _limit_reached(plan, signatures_used_this_month(org))
    used_before = used_after - count
    return UsageAfter(used_before, used_after,
                      _quota_crossings(org, period, plan.included_signatures, used_before, used_after))


def usage_precheck(*, org: Organization, count: int) -> None:
    """Refuse early (before costly work) when a blocking plan has no room for `count` more signatures.

    Advisory: `usage_consume` still decides atomically at commit. Raises SignatureLimitReached
    (after announcing quota.limit, once per period).
    """
    plan = get_plan(org.plan)
    if not plan.blocks_at_limit:
        return
    used = signatures_used_this_month(org)
    if used + count > plan.included_signatures:
        usage_refused(org=org)
        raise _limit_reached(plan, used)


def usage_refused(*, org: Organization) -> None:
    """A signing was refused with 402: emit quota.limit unless this period already did (own transaction)."""
    plan = get_plan(org.plan)
    period = period_start(timezone.now())
    with transaction.atomic():
        _ensure_counter(org, period)
        if _claim_limit_announcement(org, period):
            used = signatures_used_this_month(org)
            event_emit(org=org, kind="quota.limit",
                       data={**_quota_data(org, plan.included_signatures, used, period), "blocked": True})


def _limit_reached(plan, current: int) -> SignatureLimitReached:
    return SignatureLimitReached(upgrade_url=upgrade_url(settings.PUBLIC_BASE_URL, "starter"),
                                 limit=plan.included_signatures, current=current)


def _increment(org: Organization, period, count: int, cap: int | None) -> int | None:
    """UPDATE ... RETURNING on the counter row; None when no row matched (absent, or the cap is hit)."""
    table = UsageCounter._meta.db_table
    org_value = UsageCounter._meta.get_field("org").get_db_prep_value(org.pk, connection)
    sql = f"UPDATE {table} SET signatures_used = signatures_used + %s WHERE org_id = %s AND period_start = %s"  # noqa: S608
    params: list = [count, org_value, period]
    if cap is not None:
        sql += " AND signatures_used + %s <= %s"
        params += [count, cap]
    with connection.cursor() as cursor:
        cursor.execute(sql + " RETURNING signatures_used", params)
        row = cursor.fetchone()
    return row[0] if row else None


def _ensure_counter(org: Organization, period) -> None:
    UsageCounter.objects.bulk_create([UsageCounter(org=org, period_start=period)], ignore_conflicts=True)


def _quota_crossings(org: Organization, period, included: int | None, used_before: int, used_after: int) -> tuple:
    if not included:
        return ()
    crossed = []
    if used_before < included * QUOTA_WARNING_FRACTION <= used_after:
        crossed.append(("quota.warning", _quota_data(org, included, used_after, period)))
    if used_before < included <= used_after and _claim_limit_announcement(org, period):
        # `blocked`: whether signing stops here (free) or goes on as overage (paid plans).
        blocked = get_plan(org.plan).blocks_at_limit
        crossed.append(("quota.limit", {**_quota_data(org, included, used_after, period), "blocked": blocked}))
    return tuple(crossed)


def _claim_limit_announcement(org: Organization, period) -> bool:
    """Mark this period's quota.limit as sent; False when it already was (once per period)."""
    return bool(UsageCounter.objects.filter(org=org, period_start=period, limit_announced=False)
                .update(limit_announced=True))


def _quota_data(org: Organization, included: int, used: int, period) -> dict:
    return {"plan": org.plan, "signatures_used": used, "signatures_included": included,
            "period_start": period.isoformat()}


def plan_request_create(*, org: Organization, actor: User, plan: str, billing_interval: str) -> PlanRequest:
    """Record the owner's request to move to `plan` billed `billing_interval` (replacing a pending one),
    and email the staff at BILLING_CONTACT_EMAIL once it is committed.

    Raises Forbidden (the actor is not the owner), ValidationFailed (an unknown plan or interval, or
    the plan and interval the organization has now).
    """
    if plan not in PLANS or billing_interval not in BILLING_INTERVALS:
        raise ValidationFailed(details={"plan": ["Choose a plan and an interval from the table."]})
    with transaction.atomic():
        current = Organization.objects.select_for_update().get(pk=org.pk)  # one pending request at a time
        _require_owner(current, actor)
        if (plan, billing_interval) == (current.plan, current.billing_interval):
            raise ValidationFailed(details={"plan": [f"You are on {plan}, billed {billing_interval}, already."]})
        PlanRequest.objects.for_org(org).filter(status=PlanRequest.Status.PENDING).update(
            status=PlanRequest.Status.CANCELLED, decided_at=timezone.now(), decided_by=actor.email)
        wanted = PlanRequest.objects.create(org=current, requested_by=actor, requested_by_email=actor.email,
                                            plan=plan, billing_interval=billing_interval)
        transaction.on_commit(lambda: _staff_email_send(wanted, current))
    return wanted


def plan_request_cancel(*, org: Organization, actor: User, request_id) -> PlanRequest:
    """Withdraw the organization's pending request. Raises Forbidden (not the owner), NotFound (unknown,
    another organization's, or no longer pending)."""
    with transaction.atomic():
        _require_owner(Organization.objects.select_for_update().get(pk=org.pk), actor)
        wanted = _pending_request_locked(PlanRequest.objects.for_org(org), request_id)
        wanted.status, wanted.decided_at, wanted.decided_by = (
            PlanRequest.Status.CANCELLED, timezone.now(), actor.email)
        wanted.save(update_fields=["status", "decided_at", "decided_by"])
    return wanted


def plan_request_apply(*, request_id, staff_email: str) -> PlanRequest:
    """Staff apply a pending request: the plan changes through `plan_change` (audit `billing.plan_changed`
    with the staff email as actor). Raises NotFound when the request is no longer pending."""
    with transaction.atomic():
        wanted = _pending_request_locked(PlanRequest.objects.select_related("org"), request_id)
        plan_change(org=wanted.org, plan=wanted.plan, billing_interval=wanted.billing_interval, actor=staff_email)
        wanted.status, wanted.decided_at, wanted.decided_by = (
            PlanRequest.Status.APPLIED, timezone.now(), staff_email)
        wanted.save(update_fields=["status", "decided_at", "decided_by"])
    return wanted


def _require_owner(org: Organization, actor: User) -> None:
    # The role as stored now: an owner demoted in another tab asks no more.
    role = User.objects.for_org(org).filter(pk=actor.pk).values_list("role", flat=True).first()
    if role != Role.OWNER:
        raise Forbidden("Only the organization's owner changes its plan.")


def _pending_request_locked(requests, request_id) -> PlanRequest:
    wanted = requests.select_for_update().filter(pk=request_id, status=PlanRequest.Status.PENDING).first()
    if wanted is None:
        raise NotFound("No such pending plan request.")
    return wanted


def _staff_email_send(wanted: PlanRequest, org: Organization) -> None:
    templated_email_send(
        to=settings.BILLING_CONTACT_EMAIL, subject=f"Plan request: {org.name} asks for {wanted.plan}",
        template="plan_request", context={
            "wanted": wanted, "org": org, "plan": PLANS[wanted.plan],
            "admin_link": f"{settings.PUBLIC_BASE_URL}/admin/billing/planrequest/{wanted.pk}/change/"})
