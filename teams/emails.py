"""The invite email, sent like the accounts emails (text and HTML templates, Django's mail framework)."""

from django.conf import settings

from accounts.emails import templated_email_send
from teams.models import Invite


def invite_email_send(*, invite: Invite, token: str) -> None:
    link = f"{settings.PUBLIC_BASE_URL}/invite/{token}"  # addendum section 2
    org_name = " ".join(invite.org.name.split())  # a subject is one line
    templated_email_send(to=invite.email, subject=f"You are invited to join {org_name}", template="team_invite",
                         context={"invite": invite, "org_name": org_name, "inviter": invite.inviter, "link": link,
                                  "token": token})
