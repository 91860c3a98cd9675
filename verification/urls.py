from django.urls import path

from verification import api

urlpatterns = [
    path("verify", api.VerifyView.as_view()),
    path("verify/batch", api.VerifyBatchView.as_view()),
    path("c2pa/matches/byBinding", api.MatchesByBindingView.as_view()),
    path("c2pa/matches/byContent", api.MatchesByContentView.as_view()),
    path("c2pa/services/supportedAlgorithms", api.SupportedAlgorithmsView.as_view()),
]
