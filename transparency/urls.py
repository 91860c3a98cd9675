from django.urls import path, re_path

from transparency import api

urlpatterns = [
    path("log/checkpoint", api.CheckpointView.as_view()),
    path("log/keys", api.LogKeysView.as_view()),
    path("log/inclusion", api.InclusionView.as_view()),
    path("log/consistency", api.ConsistencyView.as_view()),
    # Everything under tile/ reaches the view, which answers 400 for a malformed path (not the catch-all 404).
    re_path(r"^log/tile/(?P<path>[\s\S]*)$", api.TileView.as_view()),
]
