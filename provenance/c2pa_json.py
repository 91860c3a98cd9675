"""The C2PA-style JSON export of a record (spec: GET /v1/records/:id/c2pa). Pure: values in, dict out."""

from datetime import datetime

SIGNATURE_ALGORITHM_LABEL = "ML-DSA-65 (NIST FIPS 204)"
CLAIM_GENERATOR = "Provenance Service/1.0"


def c2pa_manifest(*, record_id: str, model: str, signed_at: datetime, content_hash: str, base_url: str) -> dict:
    """A compatibility manifest, not a signed C2PA manifest. `content_hash` is `sha3-256:<hex>`."""
    return {
        "@context": {
            "c2pa": "https://c2pa.org/specifications/specifications/2.1/",
            "service": f"{base_url.rstrip('/')}/ns/provenance/1.0/",
        },
        "claim_generator": CLAIM_GENERATOR,
        "instance_id": f"service:{record_id}",
        "assertions": [
            {"label": "c2pa.actions",
             "data": {"actions": [{"action": "c2pa.created", "when": _iso_z(signed_at)}]}},
            {"label": "service.provenance",
             "data": {"record_id": record_id, "model": model, "signature_algorithm": SIGNATURE_ALGORITHM_LABEL}},
            {"label": "c2pa.hash.data",
             "data": {"name": "SHA3-256", "hash": content_hash.removeprefix("sha3-256:")}},
        ],
    }


def _iso_z(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
