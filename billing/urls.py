from django.urls import path

from billing import api

urlpatterns = [
    path("billing/plans", api.PlanCatalogueView.as_view()),
]
