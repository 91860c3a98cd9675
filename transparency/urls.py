from django.urls import path, re_path

from transparency import api

urlpatterns = [
    path("checkpoint", api.CheckpointView.as_view()),
    path("keys", api.LogKeysView.as_view()),
    path("inclusion", api.InclusionView.as_view()),
    path("consistency", api.ConsistencyView.as_view()),
    # Everything under tile/ reaches the view, which answers 400 for a malformed path (not the catch-all 404).
    re_path(r"^tile/(?P<path>[\s\S]*)$", api.TileView.as_view()),
]
