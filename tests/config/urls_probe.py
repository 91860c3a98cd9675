"""A test-only route that any credential may call, to exercise the shared API machinery."""

from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

from core.throttles import VerifyIpThrottle


class WhoAmIView(APIView):
    def get(self, request):
        return Response({"org_id": str(request.org.pk), "kind": request.auth.kind})


class PublicProbeView(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes = [VerifyIpThrottle]

    def get(self, request):
        return Response({"ok": True})

    def post(self, request):
        return Response({"received": request.data})


class BrokenView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        raise RuntimeError("secret internal detail")


def plain_database_view(request):
    """Not a DRF view: what it raises goes to Django's handler500, not the DRF handler."""
    from django.db import connection
    from django.http import JsonResponse

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return JsonResponse({"ok": cursor.fetchone()[0]})


urlpatterns = [
    path("v1/probe/plain-database", plain_database_view),
    path("v1/probe/whoami", WhoAmIView.as_view()),
    path("v1/probe/public", PublicProbeView.as_view()),
    path("v1/probe/broken", BrokenView.as_view()),
    path("", include("config.urls")),
]

handler404 = "core.errors.handler404"
handler500 = "core.errors.handler500"
