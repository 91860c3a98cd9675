from django.conf import settings
from drf_spectacular.utils import extend_schema_field

from core.validation import serializers
from jobs.models import Job, JobItem
from jobs.selectors import item_has_download, job_progress


class JobAcceptedOutput(serializers.Serializer):
    job_id = serializers.UUIDField(source="pk")
    status = serializers.ChoiceField(choices=Job.Status.choices)


@extend_schema_field({"type": "object", "nullable": True, "required": ["error", "message"],
                      "properties": {"error": {"type": "string"}, "message": {"type": "string"},
                                     "details": {"type": "object"}},
                      "description": "Why the item failed, in the error envelope's shape; null unless failed."})
class ErrorField(serializers.JSONField):
    pass


class JobItemOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=JobItem.Status.choices)
    record_id = serializers.UUIDField(allow_null=True)
    token = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    error = ErrorField(allow_null=True)

    def get_token(self, item: JobItem) -> str | None:
        return item.token or None

    def get_download_url(self, item: JobItem) -> str | None:
        """Authenticated (the same credential), org-scoped, for 24 hours after the job finished."""
        if not item_has_download(self.context["job"], item):
            return None
        return f"{settings.PUBLIC_BASE_URL}/v1/jobs/{item.job_id}/items/{item.position}/content"


class JobOutput(serializers.Serializer):
    job_id = serializers.UUIDField(source="pk")
    status = serializers.ChoiceField(choices=Job.Status.choices)
    progress = serializers.SerializerMethodField()
    items = serializers.SerializerMethodField()

    def get_progress(self, job: Job) -> float:
        return round(job_progress(job), 4)

    @extend_schema_field(JobItemOutput(many=True))
    def get_items(self, job: Job) -> list[dict]:
        return JobItemOutput(job.items.all(), many=True, context={"job": job}).data
