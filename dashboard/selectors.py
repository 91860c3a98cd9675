"""Reads of the dashboard's own rows: a signed file for its signer, and its bytes a piece at a time."""

from collections.abc import Iterator

from django.db.models import BinaryField
from django.db.models.functions import Substr

from accounts.models import Organization, User
from core.errors import NotFound
from dashboard.models import SignedFile

CHUNK_BYTES = 512 * 1024


def signed_file_get(*, org: Organization, user: User, file_id) -> SignedFile:
    """The unexpired signed file `file_id` that `user` of `org` signed, without its bytes. Raises NotFound
    (another organization's or member's, expired, or unknown)."""
    signed = (SignedFile.objects.for_org(org).unexpired().filter(pk=file_id, user=user).defer("data")
              .select_related("record").first())
    if signed is None:
        raise NotFound("No such download: it expires an hour after signing. Sign the file again.")
    return signed


def signed_file_chunks(signed: SignedFile) -> Iterator[bytes]:
    """The file's bytes in CHUNK_BYTES pieces, each read by its own query (SUBSTRING of the column), so
    a worker holds one piece at a time, never the whole file."""
    rows = SignedFile.objects.filter(pk=signed.pk)
    for start in range(0, signed.size, CHUNK_BYTES):
        piece = rows.annotate(piece=Substr("data", start + 1, CHUNK_BYTES,
                                           output_field=BinaryField())).values_list("piece", flat=True).first()
        if piece is None:
            return  # purged while being read: the download ends short, as a broken connection would
        yield bytes(piece)
