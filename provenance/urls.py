from django.urls import path

from provenance import api

# Declared where config/urls.py includes the list. POST /v1/sign and the C2PA embed are mounted by jobs/urls.py,
# whose views add the asynchronous answer to these.
records = [
    path("", api.RecordListCreateView.as_view()),
    path("/batch", api.RecordBatchView.as_view()),
    path("/<uuid:record_id>", api.RecordDetailView.as_view()),
    path("/<uuid:record_id>/c2pa", api.RecordC2paView.as_view()),
]

compliance = [path("/report", api.ComplianceReportView.as_view())]
