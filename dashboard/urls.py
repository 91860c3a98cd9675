"""Dashboard paths: the signed-in pages under /dashboard, the public forms at the top level.

The pages behind emailed links (/verify-email, /reset-password, /invite/<token>, addendum 2) are
their apps' views, routed here so they count per client IP like the API routes they mirror.
"""

from django.urls import path
from django.views.generic import RedirectView

from accounts import views as account_pages
from dashboard.access import no_dead_end, public_form
from dashboard.views import (
    api_keys,
    audit,
    auth,
    billing,
    compliance,
    generators,
    overview,
    records,
    signing,
    team,
    verify,
    webhooks,
)
from teams import views as team_pages

app_name = "dashboard"

emailed_links = [
    path("verify-email", public_form(account_pages.verify_email_page), name="verify-email"),
    path("reset-password", public_form(account_pages.reset_password_page), name="reset-password"),
    path("invite/<str:token>", public_form(team_pages.accept_invite_page), name="accept-invite"),
]

public = [
    path("", RedirectView.as_view(pattern_name="dashboard:overview"), name="home"),
    path("login", auth.login_page, name="login"),
    path("login/2fa", auth.login_2fa_page, name="login-2fa"),
    path("signup", auth.signup_page, name="signup"),
    path("logout", auth.logout_page, name="logout"),
    path("forgot-password", auth.forgot_password_page, name="forgot-password"),
    path("resend-verification", auth.resend_verification_page, name="resend-verification"),
    path("verify", verify.verify_page, name="verify"),
]

pages = [
    path("dashboard", overview.overview_page, name="overview"),
    path("dashboard/", RedirectView.as_view(pattern_name="dashboard:overview")),  # APPEND_SLASH is off
    path("dashboard/security", auth.security_page, name="security"),
    path("dashboard/security/2fa/setup", auth.two_factor_setup, name="2fa-setup"),
    path("dashboard/security/2fa/enable", auth.two_factor_enable, name="2fa-enable"),
    path("dashboard/security/2fa/disable", auth.two_factor_disable, name="2fa-disable"),
    path("dashboard/security/recovery-codes", auth.recovery_codes_page, name="recovery-codes"),
    path("dashboard/security/recovery-codes/new", auth.recovery_codes_regenerate, name="recovery-codes-new"),
    path("dashboard/security/password", auth.password_change, name="password-change"),
    path("dashboard/api-keys", api_keys.api_keys_page, name="api-keys"),
    path("dashboard/api-keys/new", api_keys.api_key_create, name="api-key-create"),
    path("dashboard/api-keys/<uuid:key_id>/created", api_keys.api_key_created, name="api-key-created"),
    path("dashboard/api-keys/<uuid:key_id>/revoke", api_keys.api_key_revoke, name="api-key-revoke"),
    path("dashboard/api-keys/personal/new", api_keys.personal_key_create, name="personal-key-create"),
    path("dashboard/api-keys/personal/<uuid:key_id>/revoke", api_keys.personal_key_revoke,
         name="personal-key-revoke"),
    path("dashboard/generators", generators.generators_page, name="generators"),
    path("dashboard/generators/<uuid:generator_id>", generators.generator_page, name="generator"),
    path("dashboard/generators/<uuid:generator_id>/rotate", generators.generator_rotate, name="generator-rotate"),
    path("dashboard/generators/<uuid:generator_id>/revoke", generators.generator_revoke, name="generator-revoke"),
    path("dashboard/sign", signing.sign_page, name="sign"),
    path("dashboard/sign/<uuid:file_id>", signing.signed_page, name="signed"),
    path("dashboard/sign/<uuid:file_id>/download", signing.signed_download, name="signed-download"),
    path("dashboard/records", records.records_page, name="records"),
    path("dashboard/team", team.team_page, name="team"),
    path("dashboard/team/invites", team.invite_send, name="invite-send"),
    path("dashboard/team/invites/<uuid:invite_id>/cancel", team.invite_cancel, name="invite-cancel"),
    path("dashboard/team/members/<uuid:user_id>/role", team.member_role_change, name="member-role"),
    path("dashboard/team/members/<uuid:user_id>/remove", team.member_remove, name="member-remove"),
    path("dashboard/team/members/<uuid:user_id>/api-keys", team.member_keys, name="member-keys"),
    path("dashboard/team/members/<uuid:user_id>/api-keys/<uuid:key_id>/revoke", team.member_key_revoke,
         name="member-key-revoke"),
    path("dashboard/webhooks", webhooks.webhooks_page, name="webhooks"),
    path("dashboard/webhooks/<uuid:webhook_id>", webhooks.webhook_page, name="webhook"),
    path("dashboard/webhooks/<uuid:webhook_id>/created", webhooks.webhook_created, name="webhook-created"),
    path("dashboard/webhooks/<uuid:webhook_id>/edit", webhooks.webhook_edit, name="webhook-edit"),
    path("dashboard/webhooks/<uuid:webhook_id>/status", webhooks.webhook_status, name="webhook-status"),
    path("dashboard/webhooks/<uuid:webhook_id>/delete", webhooks.webhook_delete, name="webhook-delete"),
    path("dashboard/webhooks/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/retry", webhooks.webhook_retry,
         name="webhook-retry"),
    path("dashboard/audit", audit.audit_page_view, name="audit"),
    path("dashboard/audit/export", audit.audit_export_view, name="audit-export"),
    path("dashboard/compliance", compliance.compliance_page, name="compliance"),
    path("dashboard/compliance/download", compliance.compliance_download_view, name="compliance-download"),
    path("dashboard/billing", billing.billing_page, name="billing"),
    path("dashboard/billing/requests", billing.plan_request_create, name="plan-request"),
    path("dashboard/billing/requests/<uuid:request_id>/cancel", billing.plan_request_cancel,
         name="plan-request-cancel"),
]

# Where each action that takes a form lives: the page a GET of its address (typed, bookmarked, reached
# with Back) lands on when the action's own view has no answer for GET (dashboard.access.no_dead_end).
ACTION_HOMES = {
    "logout": "dashboard:overview",
    "2fa-setup": "dashboard:security",
    "2fa-enable": "dashboard:security",
    "2fa-disable": "dashboard:security",
    "recovery-codes-new": "dashboard:security",
    "password-change": "dashboard:security",
}

urlpatterns = public + emailed_links + pages
for _pattern in urlpatterns:
    _pattern.callback = no_dead_end(_pattern.callback, home=ACTION_HOMES.get(_pattern.name, "dashboard:overview"))
