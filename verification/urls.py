from django.urls import path

from verification import api

# Two prefixes, each declared where config/urls.py includes its list: verify and c2pa/ (soft-binding resolution).
verify = [
    path("", api.VerifyView.as_view()),
    path("/batch", api.VerifyBatchView.as_view()),
]

c2pa = [
    path("matches/byBinding", api.MatchesByBindingView.as_view()),
    path("matches/byContent", api.MatchesByContentView.as_view()),
    path("services/supportedAlgorithms", api.SupportedAlgorithmsView.as_view()),
]
