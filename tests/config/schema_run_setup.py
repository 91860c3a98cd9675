"""Run as a separate process: migrate a fresh database and create the caller schemathesis acts as.

Prints a JSON object with an organization API key and two session JWTs of its owner (enterprise plan,
so the per-organization limit never trips: the second for the run of the operations that end a
session), and the ids of one of each thing the routes name in their paths (signed records in the
transparency log, a member with a personal key, an invite, a webhook with a delivery), so the examples
phase reaches past the 404s. With a folder argument, the signed JPEG and PNG of two records are written there.
"""

import json
import os
import sys
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main(folder: Path | None = None) -> dict:
    django.setup()
    from django.core.management import call_command

    from tests import factories

    call_command("migrate", verbosity=0)
    org = factories.make_org(plan="enterprise", name="Schemathesis")
    owner = factories.make_user(org=org, role="owner")
    generator = factories.make_generator(org=org, name="server-gen")
    factories.make_client_generator(org=org)
    key = factories.make_api_key(org=org)
    credentials = {"key": key, "token": factories.session_token(owner), "token_to_end": factories.session_token(owner)}
    if folder is None:
        return credentials
    return {**credentials, **_things(org, owner, generator, key, folder)}


def _things(org, owner, generator, key: str, folder: Path) -> dict:
    from django.test import Client

    from tests import factories
    from tests.hostile_media import sample
    from transparency import services as log
    from webhooks.models import WebhookDelivery
    from webhooks.services import webhook_update

    # schemathesis reuses the UUIDs of examples as other operations' path arguments (a generator named in a
    # sign example gets revoked by PUT /v1/generators/{id}/revoke): the records' generator is named nowhere.
    records, signer = {}, factories.make_generator(org=org, name="records-gen", formats=["image"])
    for fmt in ("jpeg", "png"):
        signed = Client().post("/v1/sign", {"content": _upload(sample(fmt)), "model": "m",
                                            "generator_id": str(signer.pk)}, HTTP_AUTHORIZATION=f"Bearer {key}")
        assert signed.status_code == 201, signed.content[:300]
        (folder / f"signed.{fmt}").write_bytes(signed.content)
        records[fmt] = signed["X-Service-Record-Id"]
    log.log_sequence()
    log.log_checkpoint_sign()
    spare = factories.make_generator(org=org, name="spare-gen")
    member = factories.make_user(org=org, role="user")
    factories.make_personal_key(user=member)
    invite, invite_token = factories.make_invite(org=org, inviter=owner)
    endpoint, _ = factories.make_webhook(org=org, events=["generator.revoked"])
    webhook_update(endpoint=endpoint, status="disabled")  # nothing is sent to it during the run
    delivery = WebhookDelivery.objects.create(org=org, endpoint=endpoint, event="generator.revoked",
                                              payload="{}", status=WebhookDelivery.Status.FAILED)
    return {"generator_id": str(generator.pk), "spare_generator_id": str(spare.pk),
            "record_id": records["jpeg"], "png_record_id": records["png"],
            "member_id": str(member.pk), "member_key_id": str(member.personal_api_keys.get().pk),
            "invite_id": str(invite.pk), "invite_token": invite_token, "webhook_id": str(endpoint.pk),
            "delivery_id": str(delivery.pk), "signed_jpeg": str(folder / "signed.jpeg"),
            "signed_png": str(folder / "signed.png")}


def _upload(content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("image", content)


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)))
