from dataclasses import asdict

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.plans import PLANS, upgrade_url
from billing.selectors import usage_for_org
from billing.serializers import PlanListOutput, UsageOutput
from core.cors import PublicCors
from core.throttles import VerifyIpThrottle


class PlanCatalogueView(PublicCors, APIView):
    """The public plan catalogue, from the one plan table."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(responses={200: PlanListOutput}, tags=["billing"])
    def get(self, request):
        plans = [{**asdict(plan), "upgrade_url": upgrade_url(settings.PUBLIC_BASE_URL, plan.name)}
                 for plan in PLANS.values()]
        return Response(PlanListOutput({"plans": plans}).data)


class UsageView(APIView):
    """The caller's organization's signatures this calendar month (UTC)."""

    @extend_schema(responses={200: UsageOutput}, tags=["billing"])
    def get(self, request):
        return Response(UsageOutput(usage_for_org(request.org)).data)
