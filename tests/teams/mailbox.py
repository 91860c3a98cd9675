"""Reading the invite email back from Django's test outbox."""

import re

from django.core import mail

LINK = re.compile(r"(https?://[^\s\"<]+)/invite/([A-Za-z0-9_\-]+)")


def invite_links(message=None) -> tuple[str, str]:
    """The invite link in the text body and in the HTML alternative of `message` (default: the last email)."""
    message = message or mail.outbox[-1]
    html = next(content for content, mimetype in message.alternatives if mimetype == "text/html")
    text_match, html_match = LINK.search(message.body), LINK.search(html)
    assert text_match and html_match, message.body
    return text_match.group(0), html_match.group(0)


def invite_token_from_mail(message=None) -> str:
    """The token of the invite link in `message` (default: the last email sent)."""
    text_link, _ = invite_links(message)
    return text_link.rsplit("/", 1)[1]
