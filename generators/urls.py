from django.urls import path
from rest_framework.routers import SimpleRouter

from generators import api

router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("generators", api.GeneratorViewSet, basename="generator")

# Two prefixes: the router's own (DRF builds "generators" and "generators/<pk>" from it, so config/urls.py
# includes this list at ""), and keys/, declared where config/urls.py includes it.
generators = router.urls

keys = [path("<uuid:generator_id>", api.PublicKeyView.as_view())]
