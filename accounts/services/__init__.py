"""State changes of the accounts domain, one transaction each."""

from accounts.services.api_keys import api_key_create, api_key_revoke, api_key_touch
from accounts.services.auth import (
    LoginResult,
    email_verify,
    password_forgot,
    password_reset,
    session_login,
    session_logout,
    user_register,
    verification_resend,
)
from accounts.services.two_factor import (
    two_factor_disable,
    two_factor_enable,
    two_factor_setup,
    two_factor_verify,
)

__all__ = [
    "LoginResult",
    "api_key_create",
    "api_key_revoke",
    "api_key_touch",
    "email_verify",
    "password_forgot",
    "password_reset",
    "session_login",
    "session_logout",
    "two_factor_disable",
    "two_factor_enable",
    "two_factor_setup",
    "two_factor_verify",
    "user_register",
    "verification_resend",
]
