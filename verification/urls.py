from django.urls import path

from verification import api

urlpatterns = [
    path("verify", api.VerifyView.as_view()),
    path("verify/batch", api.VerifyBatchView.as_view()),
]
