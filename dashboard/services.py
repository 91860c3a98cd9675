"""State changes of the dashboard's own: signing a file for download, and forgetting old downloads."""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from accounts.models import Organization, User
from dashboard.models import SignedFile
from provenance.signing import content_sign

# A signed file waits this long for its download; `manage.py purge_expired` deletes it afterwards.
DOWNLOAD_LIFETIME = timedelta(hours=1)
FILENAME_MAX = 200
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._ -]+")


@dataclass(frozen=True)
class SignRequest:
    generator_id: str
    model: str
    data: bytes
    declared_family: str | None
    upload_name: str
    c2pa: bool = False
    visible: bool = False  # the generator's visible AI label (disclosure=visible)


def signed_file_create(*, org: Organization, user: User, request: SignRequest) -> SignedFile:
    """Sign like POST /v1/sign (`content_sign`, with its errors), then keep the signed bytes in the
    database for `user`'s download link, for DOWNLOAD_LIFETIME."""
    signed = content_sign(org=org, generator_id=request.generator_id, model=request.model, data=request.data,
                          declared_family=request.declared_family, c2pa=request.c2pa, visible=request.visible)
    now = timezone.now()
    return SignedFile.objects.create(
        org=org, user=user, record=signed.record, token=signed.token,
        filename=download_filename(request.upload_name), mime_type=signed.codec.mime_type, size=len(signed.data),
        data=signed.data, created_at=now, expires_at=now + DOWNLOAD_LIFETIME)


def download_filename(upload_name: str) -> str:
    """`signed-<the upload's name>`, without folders or characters a header or a file system may
    misread."""
    base = upload_name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE_IN_FILENAME.sub("_", base).strip(" .") or "file"
    return f"signed-{cleaned}"[:FILENAME_MAX]


def signed_files_purge(*, before: datetime) -> int:
    """Delete the signed files that expired before `before`; returns how many."""
    deleted, _ = SignedFile.objects.filter(expires_at__lt=before).delete()
    return deleted
