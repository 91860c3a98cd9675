"""Test-only routes that fail outside DRF: Django's own 500 path (handler500), for the API and for pages."""

from django.urls import include, path


def broken_plain_view(request):
    raise RuntimeError("failure outside DRF")


urlpatterns = [
    path("v1/probe/broken-plain", broken_plain_view),
    path("probe/broken-page", broken_plain_view),
    path("", include("tests.config.urls_probe")),
]

handler404 = "core.errors.handler404"
handler500 = "core.errors.handler500"
