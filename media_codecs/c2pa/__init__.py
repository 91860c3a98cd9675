"""C2PA manifests in every format with a carrier (JPEG, PNG, WebP, WAV, MP3, FLAC, MP4, MOV, PDF): build, sign
(COSE_Sign1: ML-DSA-65, or hybrid ES256 + ML-DSA-65 countersignature), embed, read, verify, strip, and
validate an upstream manifest to carry it as our parent ingredient.

Pure like the rest of media_codecs: the signing and verifying keys come in as callables.
"""

from media_codecs.c2pa.certificate import self_signed_certificate
from media_codecs.c2pa.manifest import ManifestFacts, build_store, embed, embed_jpeg, embed_png, strip_manifest
from media_codecs.c2pa.reading import ReadManifest, Verification, check_manifest, read_manifest, verify_manifest
from media_codecs.c2pa.upstream import (
    MAX_UPSTREAM_STORE_BYTES,
    UpstreamManifest,
    upstream_from_store,
    validate_upstream,
)

__all__ = [
    "MAX_UPSTREAM_STORE_BYTES",
    "ManifestFacts",
    "ReadManifest",
    "UpstreamManifest",
    "Verification",
    "build_store",
    "check_manifest",
    "embed",
    "embed_jpeg",
    "embed_png",
    "read_manifest",
    "self_signed_certificate",
    "strip_manifest",
    "upstream_from_store",
    "validate_upstream",
    "verify_manifest",
]
