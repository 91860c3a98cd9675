from django.urls import path

from billing import api

urlpatterns = [
    path("billing/plans", api.PlanCatalogueView.as_view()),
    path("billing/usage", api.UsageView.as_view()),
]
