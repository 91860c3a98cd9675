from django.urls import path

from provenance import api

# Two prefixes, each declared where config/urls.py includes its list: sign and records.
sign = [path("", api.SignView.as_view())]

records = [
    path("", api.RecordListCreateView.as_view()),
    path("/batch", api.RecordBatchView.as_view()),
    path("/<uuid:record_id>", api.RecordDetailView.as_view()),
    path("/<uuid:record_id>/c2pa", api.RecordC2paView.as_view()),
    path("/<uuid:record_id>/c2pa/embed", api.RecordC2paEmbedView.as_view()),
]
