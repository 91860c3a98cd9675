"""schemathesis hooks (SCHEMATHESIS_HOOKS) for test_openapi_conformance: explicit examples with real data.

Generated data rarely names a record that exists or uploads a real file, so every operation that takes
an id or a file also gets examples built from what schema_run_setup made (its JSON is in the file
SCHEMA_RUN_CONTEXT names): the upload routes get a valid file of each of the 13 formats, a truncated
one and an empty one, as real multipart file parts; the routes with ids get the real ids. Each example's
answer goes through the same checks as the generated ones.
"""

import json
import os
from pathlib import Path

import schemathesis

from media_codecs.c2pa.manifest import WATERMARK_ALGORITHM
from tests import hostile_media as hm

CONTEXT = json.loads(Path(os.environ["SCHEMA_RUN_CONTEXT"]).read_text())
MULTIPART = "multipart/form-data"


def _files() -> list[bytes]:
    return [hm.sample(fmt) for fmt in hm.FORMATS] + [hm.truncated("mp4", 0.5), hm.sample("pdf")[:20], b""]


def _examples(label: str) -> list[dict]:
    """Keyword arguments of operation.Case for the operation `METHOD /path`."""
    ids = CONTEXT
    signed = Path(ids["signed_jpeg"]).read_bytes()
    record = {"record_id": ids["record_id"]}
    table = {
        "POST /v1/sign": [{"body": {"content": content, "model": "schemathesis", "generator_id": ids["generator_id"]},
                           "media_type": MULTIPART} for content in _files()],
        "POST /v1/verify": [{"body": {"content": content}, "media_type": MULTIPART}
                            for content in [*_files(), signed]],
        "POST /v1/c2pa/matches/byContent": [{"body": {"content": signed}, "media_type": MULTIPART},
                                            {"body": {"content": hm.sample("png")}, "media_type": MULTIPART}],
        "POST /v1/records/{record_id}/c2pa/embed": [{"path_parameters": record, "body": {"content": signed},
                                                     "media_type": MULTIPART},
                                                    {"path_parameters": {"record_id": ids["png_record_id"]},
                                                     "body": {"content": Path(ids["signed_png"]).read_bytes()},
                                                     "media_type": MULTIPART},
                                                    {"path_parameters": record, "body": {"content": hm.sample("wav")},
                                                     "media_type": MULTIPART}],
        "GET /v1/records/{record_id}": [{"path_parameters": record}],
        "GET /v1/records/{record_id}/c2pa": [{"path_parameters": record}],
        "GET /v1/keys/{generator_id}": [{"path_parameters": {"generator_id": ids["generator_id"]}}],
        "GET /v1/generators/{id}": [{"path_parameters": {"id": ids["spare_generator_id"]}}],
        "GET /v1/log/inclusion": [{"query": record}, {"query": {"index": 0}}],
        "GET /v1/log/consistency": [{"query": {"first": 1, "second": 1}}, {"query": {"first": 0}}],
        "GET /v1/log/tile/{path}": [{"path_parameters": {"path": "0/000.p/1"}},
                                    {"path_parameters": {"path": "entries/000.p/1"}}],
        "GET /v1/c2pa/matches/byBinding": [{"query": {"alg": WATERMARK_ALGORITHM, "value": "AAAAAAAAAAA="}}],
        "GET /v1/webhooks/{id}/deliveries": [{"path_parameters": {"id": ids["webhook_id"]}}],
        "PATCH /v1/webhooks/{id}": [{"path_parameters": {"id": ids["webhook_id"]},
                                     "body": {"events": ["generator.revoked"]}, "media_type": "application/json"}],
        "POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry": [
            {"path_parameters": {"id": ids["webhook_id"], "delivery_id": ids["delivery_id"]}}],
        "GET /v1/team/invites/{token}/preview": [{"path_parameters": {"token": ids["invite_token"]}}],
        "PATCH /v1/team/members/{user_id}/role": [{"path_parameters": {"user_id": ids["member_id"]},
                                                   "body": {"role": "user"}, "media_type": "application/json"}],
        "POST /v1/team/members/{user_id}/api-keys": [{"path_parameters": {"user_id": ids["member_id"]}}],
    }
    return table.get(label, [])


@schemathesis.hook
def before_add_examples(context, examples):
    operation = context.operation
    for arguments in _examples(f"{operation.method.upper()} {operation.path}"):
        examples.append(operation.Case(**arguments))
