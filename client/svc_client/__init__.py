"""Client of the content-provenance signing service: content hashes exactly as the service computes them,
local ML-DSA-65 signing, the API as typed calls, offline verification and the `svc` command line.

The content-hash rule comes from `media_codecs` and `record_format`, the service's own packages, which this
package's wheel includes: one implementation for the service and its clients.
"""

from typing import TYPE_CHECKING

from svc_client.errors import (
    AuthenticationError,
    ClientError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    QuotaError,
    RateLimited,
    ServerError,
    ServiceError,
    ServiceUnavailable,
    ValidationError,
)
from svc_client.keys import PinnedKeys, SigningKey
from svc_client.offline import OfflineResult, verify_offline
from svc_client.signing import (
    EmbeddingError,
    RecordDraft,
    content_family,
    content_hash,
    content_phash,
    embed_token,
    record_sign,
)

if TYPE_CHECKING:
    from svc_client.client import Client, RecordCreated, SignedFile
    from svc_client.transport import RetryPolicy

# The HTTP side (requests) is imported on first use, so `svc verify --offline` never loads it.
_LAZY = {"Client": "svc_client.client", "RecordCreated": "svc_client.client", "SignedFile": "svc_client.client",
         "RetryPolicy": "svc_client.transport"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'svc_client' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AuthenticationError", "Client", "ClientError", "EmbeddingError", "NotFound", "OfflineResult", "PayloadTooLarge",
    "PermissionDenied", "PinnedKeys", "QuotaError", "RateLimited", "RecordCreated", "RecordDraft", "RetryPolicy",
    "ServerError", "ServiceError", "ServiceUnavailable", "SignedFile", "SigningKey", "ValidationError",
    "content_family", "content_hash", "content_phash", "embed_token", "record_sign", "verify_offline",
]
