"""POST /v1/sign and /v1/verify as the format tests call them: multipart, one `content` file."""

import io


def sign(client, generator, content: bytes, *, model: str, **fields):
    """The /v1/sign response for `content` signed by `generator` as `model`."""
    return client.post("/v1/sign", {"content": io.BytesIO(content), "model": model,
                                    "generator_id": str(generator.pk), **fields}, format="multipart")


def verify(api_client, content: bytes, **fields) -> dict:
    """The /v1/verify result for `content` (and any other fields, e.g. a token); asserts 200."""
    response = api_client.post("/v1/verify", {"content": io.BytesIO(content), **fields}, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def unchanged_unmarked_summary(result: dict) -> str:
    """The `summary` of an authentic result without a watermark (confidence medium), from its provenance."""
    from datetime import datetime

    provenance = result["provenance"]
    signed_at = datetime.fromisoformat(provenance["signed_at"])
    return (f"This file is exactly the content that {provenance['org']} signed with the model {provenance['model']} "
            f"on {signed_at.day} {signed_at:%B %Y}: its signature checks out and the content has not changed since. "
            "It carries no invisible watermark of that signing, so the record alone vouches for it.")


def default_disclosure(result: dict) -> dict:
    """The `disclosure` of a result whose generator declared nothing: the default source type, no names."""
    return {"digital_source_type": "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia",
            "provider_name": "", "system_name": "", "system_version": "",
            "created": result["provenance"]["signed_at"], "identifier": result["record_id"]}


def iso(moment) -> str:
    """A moment as the API and the files spell it."""
    from record_format.times import iso_timestamp

    return iso_timestamp(moment)
