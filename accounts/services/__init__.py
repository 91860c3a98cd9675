"""State changes of the accounts domain, one transaction each."""

from accounts.services.api_keys import (
    CreatedApiKey,
    api_key_create,
    api_key_revoke,
    api_key_touch,
    personal_api_key_create,
    personal_api_key_revoke,
)
from accounts.services.auth import (
    LoginResult,
    email_verify,
    password_change,
    password_forgot,
    password_reset,
    session_login,
    session_logout,
    session_token_for,
    user_register,
    verification_resend,
)
from accounts.services.members import member_create, member_delete, member_role_set
from accounts.services.organizations import organization_plan_set, organization_webhooks_set
from accounts.services.two_factor import (
    recovery_codes_regenerate,
    two_factor_challenge_renew,
    two_factor_disable,
    two_factor_enable,
    two_factor_pending_setup,
    two_factor_setup,
    two_factor_verify,
)

__all__ = [
    "CreatedApiKey",
    "LoginResult",
    "api_key_create",
    "api_key_revoke",
    "api_key_touch",
    "email_verify",
    "member_create",
    "member_delete",
    "member_role_set",
    "organization_plan_set",
    "organization_webhooks_set",
    "password_change",
    "password_forgot",
    "password_reset",
    "personal_api_key_create",
    "personal_api_key_revoke",
    "recovery_codes_regenerate",
    "session_login",
    "session_logout",
    "session_token_for",
    "two_factor_challenge_renew",
    "two_factor_disable",
    "two_factor_enable",
    "two_factor_pending_setup",
    "two_factor_setup",
    "two_factor_verify",
    "user_register",
    "verification_resend",
]
