from django.urls import path

from billing import api

urlpatterns = [
    path("plans", api.PlanCatalogueView.as_view()),
    path("usage", api.UsageView.as_view()),
]
