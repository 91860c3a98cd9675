"""/v1/log: the transparency log's public, unauthenticated reads (c2sp.org/tlog-tiles and proofs)."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, OpenApiTypes, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.cors import PublicCors
from core.errors import ValidationFailed
from core.throttles import VerifyIpThrottle
from core.validation import validated_query
from transparency import selectors
from transparency import serializers as s
from transparency.tiles import parse_tile_path

NOT_YET = OpenApiResponse(description="`not_found`: beyond the tree, or no checkpoint signed yet.")
IMMUTABLE = "public, max-age=31536000, immutable"  # a tile's or bundle's bytes never change at a given path


class PublicLogView(PublicCors, APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]


class CheckpointView(PublicLogView):
    @extend_schema(responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The signed note"),
                              404: NOT_YET},
                   tags=["log"])
    def get(self, request):
        # Mutable: tlog-tiles asks that it not be cached beyond a few seconds.
        return HttpResponse(selectors.latest_checkpoint(), content_type="text/plain; charset=utf-8",
                            headers={"Cache-Control": "public, max-age=1"})


class LogKeysView(PublicLogView):
    @extend_schema(responses={200: s.LogKeysOutput}, tags=["log"])
    def get(self, request):
        return Response(s.LogKeysOutput(selectors.log_public_keys()).data)


class InclusionView(PublicLogView):
    @extend_schema(parameters=[s.InclusionQuery], responses={200: s.RecordInclusionOutput, 404: NOT_YET}, tags=["log"])
    def get(self, request):
        query = validated_query(s.InclusionQuery, request)
        if "record_id" in query:
            return Response(selectors.inclusion_for_record(record_id=query["record_id"]))
        return Response(selectors.inclusion_for_index(index=query["index"]))


class ConsistencyView(PublicLogView):
    @extend_schema(parameters=[s.ConsistencyQuery], responses={200: s.ConsistencyOutput, 404: NOT_YET}, tags=["log"])
    def get(self, request):
        query = validated_query(s.ConsistencyQuery, request)
        proof = selectors.consistency_between(first=query["first"], second=query.get("second"))
        return Response(s.ConsistencyOutput(proof).data)


class TileView(PublicLogView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY)}, tags=["log"])
    def get(self, request, path):
        try:
            tile = parse_tile_path(path)
        except ValueError as error:
            raise ValidationFailed(str(error), details={"path": [str(error)]}) from None
        return HttpResponse(selectors.tile_content(tile), content_type="application/octet-stream",
                            headers={"Cache-Control": IMMUTABLE})
