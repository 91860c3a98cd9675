"""What OPTIONS answers on /v1: the route's methods, as in its Allow header; the schema has the rest.

DRF's SimpleMetadata describes POST/PUT bodies from `get_serializer()`, which our viewsets do not have
(input and output serializers are separate), and it publishes view docstrings; the OpenAPI schema at
/v1/openapi.json is the description of every body.
"""

from rest_framework.metadata import BaseMetadata


class AllowedMethodsMetadata(BaseMetadata):
    def determine_metadata(self, request, view) -> dict:
        return {"methods": list(view.allowed_methods), "schema": "/v1/openapi.json"}
