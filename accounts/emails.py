"""Transactional emails, rendered from text and HTML templates and sent through Django's mail framework."""

import logging

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from accounts.models import User

logger = logging.getLogger(__name__)


def templated_email_send(*, to: str, subject: str, template: str, context: dict) -> None:
    """Send `emails/<template>.txt` with `emails/<template>.html` as its alternative; a failure is logged."""
    context = {**context, "public_base_url": settings.PUBLIC_BASE_URL}
    text = render_to_string(f"emails/{template}.txt", context)
    html = render_to_string(f"emails/{template}.html", context)
    message = EmailMultiAlternatives(subject=subject, body=text, to=[to])
    message.attach_alternative(html, "text/html")
    try:
        message.send()
    except Exception:
        # The state change is committed; a mail outage must not turn it into a 500. The user can ask
        # for the email again (resend-verification, forgot-password).
        logger.exception("Sending %r to %s failed", subject, to)


def verification_email_send(*, user: User, token: str) -> None:
    link = f"{settings.PUBLIC_BASE_URL}/verify-email?token={token}"
    templated_email_send(to=user.email, subject="Verify your email address", template="verify_email",
          context={"user": user, "link": link, "token": token})


def password_reset_email_send(*, user: User, token: str) -> None:
    link = f"{settings.PUBLIC_BASE_URL}/reset-password?token={token}"
    templated_email_send(to=user.email, subject="Reset your password", template="reset_password",
          context={"user": user, "link": link, "token": token})


def password_changed_email_send(*, user: User) -> None:
    """Tell the user their password was changed, so a change they did not make does not go unnoticed."""
    link = f"{settings.PUBLIC_BASE_URL}/forgot-password"
    templated_email_send(to=user.email, subject="Your password was changed", template="password_changed",
                         context={"user": user, "link": link})
