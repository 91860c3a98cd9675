"""Jobs over HTTP: `Prefer: respond-async` on POST /v1/sign and the C2PA embed, POST /v1/sign/batch,
GET /v1/jobs/:id and an item's signed file.

The two synchronous routes keep their views in provenance; these subclasses answer with a job only when
the client asks (RFC 7240), and otherwise hand the request to the synchronous answer unchanged.
"""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.gates import require_feature
from core.idempotency import idempotent
from core.uploads import limit_streamed_uploads
from core.validation import validated
from jobs import selectors, services
from jobs import serializers as s
from provenance import api as provenance_api
from provenance.serializers import SignInput

BATCH_FILE_LIMIT = provenance_api.SIGN_UPLOAD_LIMIT  # each file, as POST /v1/sign
BATCH_BODY_LIMIT = 256 * 1024 * 1024  # the whole batch request (docs/decisions.md, "Jobs on Celery")

PREFER = OpenApiParameter(
    "Prefer", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
    description="`respond-async` (RFC 7240): answer 202 with a job (`Location: /v1/jobs/<job_id>`, "
                "`Preference-Applied: respond-async`) instead of the file; without it the answer is unchanged.")
ACCEPTED = OpenApiResponse(s.JobAcceptedOutput, description="With `Prefer: respond-async`: the job, to poll at "
                                                            "`Location`.")


def _with_async_answer(schema: dict) -> dict:
    return {**schema, "parameters": [*schema["parameters"], PREFER],
            "responses": {**schema["responses"], 202: ACCEPTED}}


def prefers_async(request) -> bool:
    """Whether the request's `Prefer` header (RFC 7240) names `respond-async`, among any others."""
    for preference in request.headers.get("Prefer", "").split(","):
        if preference.split(";", 1)[0].split("=", 1)[0].strip().lower() == "respond-async":
            return True
    return False


def _batch_request() -> dict:
    """POST /v1/sign's form, with up to 50 `content` files."""
    form = provenance_api.SIGN_SCHEMA["request"]["multipart/form-data"]
    files = {"type": "array", "minItems": 1, "maxItems": services.MAX_BATCH_FILES,
             "items": {"type": "string", "format": "binary"}}
    return {"multipart/form-data": {**form, "properties": {**form["properties"], "content": files}}}


def _accepted(job) -> Response:
    return Response(s.JobAcceptedOutput(job).data, status=status.HTTP_202_ACCEPTED,
                    headers={"Location": f"/v1/jobs/{job.pk}", "Preference-Applied": "respond-async"})


def _sign_params(fields: dict) -> services.SignParams:
    return services.SignParams(generator_id=fields["generator_id"], model=fields["model"],
                               format=fields.get("format"), c2pa=fields["c2pa"], watermark=fields["watermark"],
                               visible=fields["disclosure"] == "visible")


class _StreamedWhenAsync:
    """A job's upload streams to disk (kept for the worker); the synchronous answer keeps its handlers."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if prefers_async(request):
            limit_streamed_uploads(request._request, provenance_api.SIGN_UPLOAD_LIMIT)


class SignView(_StreamedWhenAsync, provenance_api.SignView):
    @extend_schema(**_with_async_answer(provenance_api.SIGN_SCHEMA))
    def post(self, request):
        return super().post(request)

    def answer(self, request):
        if not prefers_async(request):
            return super().answer(request)
        fields = validated(SignInput, request)
        job = services.job_sign_accept(org=request.org, params=_sign_params(fields),
                                       uploads=request.FILES.getlist("content"))
        return _accepted(job)


class RecordC2paEmbedView(_StreamedWhenAsync, provenance_api.RecordC2paEmbedView):
    @extend_schema(**_with_async_answer(provenance_api.EMBED_SCHEMA))
    def post(self, request, record_id):
        return super().post(request, record_id)

    def answer(self, request, record_id):
        if not prefers_async(request):
            return super().answer(request, record_id)
        job = services.job_embed_accept(org=request.org, record_id=record_id,
                                        uploads=request.FILES.getlist("content"))
        return _accepted(job)


class SignBatchView(APIView):
    """Up to 50 files signed as one job (Growth and above); always answers 202."""

    parser_classes = [MultiPartParser]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        require_feature(request.org, "batch_sign")  # 402 before the body is read
        limit_streamed_uploads(request._request, BATCH_FILE_LIMIT, max_files=services.MAX_BATCH_FILES,
                               max_total_bytes=BATCH_BODY_LIMIT)

    @extend_schema(
        request=_batch_request(),
        responses={202: ACCEPTED, 404: provenance_api.GENERATOR_NOT_FOUND}, parameters=[provenance_api.IDEMPOTENCY_KEY],
        tags=["signing"])
    @idempotent
    def post(self, request):
        fields = validated(SignInput, request)
        job = services.job_sign_accept(org=request.org, params=_sign_params(fields),
                                       uploads=request.FILES.getlist("content"), batch=True)
        return _accepted(job)


class JobDetailView(APIView):
    @extend_schema(responses={200: s.JobOutput}, tags=["jobs"])
    def get(self, request, job_id):
        return Response(s.JobOutput(selectors.job_get(org=request.org, job_id=job_id)).data)


class JobItemContentView(APIView):
    """An item's signed file, for 24 hours after its job finished."""

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(
        OpenApiTypes.BINARY, description="The signed file, in its own media type")}, tags=["jobs"])
    def get(self, request, job_id, position):
        download = selectors.job_item_download(org=request.org, job_id=job_id, position=position)
        response = FileResponse(download.file, content_type=download.item.media_type)
        response["Content-Length"] = download.size  # streamed from S3, FileResponse cannot tell it
        response["X-Service-Token"] = download.item.token
        response["X-Service-Record-Id"] = str(download.item.record_id)
        if download.item.family:
            response["X-Service-Format"] = download.item.family
        return response
