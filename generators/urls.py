from django.urls import path
from rest_framework.routers import SimpleRouter

from generators import api

router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("generators", api.GeneratorViewSet, basename="generator")

# Three prefixes: the router's own (DRF builds "generators" and "generators/<pk>" from it, so config/urls.py
# includes this list at ""), keys/ and c2pa/, declared where config/urls.py includes it.
generators = router.urls

keys = [path("<uuid:generator_id>", api.PublicKeyView.as_view())]

# Included under c2pa/ beside verification's soft-binding routes.
c2pa = [path("trust-anchors", api.TrustAnchorsView.as_view())]
