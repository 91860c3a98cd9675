from django.urls import path

from provenance import api

urlpatterns = [
    path("sign", api.SignView.as_view()),
    path("records", api.RecordListCreateView.as_view()),
    path("records/batch", api.RecordBatchView.as_view()),
    path("records/<uuid:record_id>", api.RecordDetailView.as_view()),
    path("records/<uuid:record_id>/c2pa", api.RecordC2paView.as_view()),
    path("records/<uuid:record_id>/c2pa/embed", api.RecordC2paEmbedView.as_view()),
]
