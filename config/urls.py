from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer

from core.errors import api_not_found


class ApiDocsView(SpectacularSwaggerSplitView):
    """The Swagger page, its start-up script served apart (`?script=`) so the page needs no inline script
    under our Content-Security-Policy. OPTIONS answers JSON like every other /v1 route."""

    template_name = "api_docs.html"  # drf-spectacular's, with its inline <style> moved to a static file

    def get_renderers(self):
        if self.request.method not in ("GET", "HEAD"):
            return [JSONRenderer()]
        return super().get_renderers()


class ApiSchemaView(SpectacularJSONAPIView):
    """The OpenAPI document; OPTIONS answers the usual JSON (not as an OpenAPI document's media type)."""

    def get_renderers(self):
        if self.request.method not in ("GET", "HEAD"):
            return [JSONRenderer()]
        return super().get_renderers()


api_v1 = [
    path("", include("accounts.urls")),
    path("", include("billing.urls")),
    path("", include("generators.urls")),
    path("", include("provenance.urls")),
    path("", include("audit.urls")),
    path("", include("verification.urls")),
    path("", include("teams.urls")),
    path("", include("webhooks.urls")),
    path("", include("transparency.urls")),
    path("openapi.json", ApiSchemaView.as_view(), name="openapi-schema"),
    path("docs", ApiDocsView.as_view(url_name="openapi-schema"), name="api-docs"),
    # Last: unknown /v1 paths answer in the error envelope. `[\s\S]`, not `.`, so that a path with an
    # encoded newline (%0A) is caught too rather than getting Django's HTML page.
    re_path(r"^[\s\S]*$", api_not_found),
]

urlpatterns = [
    path("v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("", include("dashboard.urls")),  # also the pages behind emailed links
]

handler400 = "core.errors.handler400"
handler403 = "core.errors.handler403"
handler404 = "core.errors.handler404"
handler500 = "core.errors.handler500"
