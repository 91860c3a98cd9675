from django.urls import path

from jobs import api

# POST /v1/sign (with its asynchronous answer) and its batch; the C2PA embed; the jobs themselves.
sign = [path("", api.SignView.as_view()), path("/batch", api.SignBatchView.as_view())]

c2pa_embed = [path("", api.RecordC2paEmbedView.as_view())]

jobs = [
    path("/<uuid:job_id>", api.JobDetailView.as_view()),
    path("/<uuid:job_id>/items/<int:position>/content", api.JobItemContentView.as_view()),
]
