from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer

from accounts import urls as accounts_urls
from core.errors import api_not_found
from generators import urls as generators_urls
from jobs import urls as jobs_urls
from provenance import urls as provenance_urls
from verification import urls as verification_urls


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


# Each app's prefix is declared here; an app serving two lists them apart. The routers (generators, webhooks)
# are included at "": DRF builds a list route without a trailing slash only from the router's own prefix.
api_v1 = [
    path("auth/", include(accounts_urls.auth)),
    path("api-keys", include(accounts_urls.api_keys)),
    path("billing/", include("billing.urls")),
    path("", include(generators_urls.generators)),
    path("keys/", include(generators_urls.keys)),
    path("sign", include(jobs_urls.sign)),
    path("records/<uuid:record_id>/c2pa/embed", include(jobs_urls.c2pa_embed)),
    path("records", include(provenance_urls.records)),
    path("jobs", include(jobs_urls.jobs)),
    path("audit", include("audit.urls")),
    path("compliance", include(provenance_urls.compliance)),
    path("verify", include(verification_urls.verify)),
    path("c2pa/", include(verification_urls.c2pa)),
    path("c2pa/", include(generators_urls.c2pa)),
    path("team/", include("teams.urls")),
    path("", include("webhooks.urls")),
    path("log/", include("transparency.urls")),
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
