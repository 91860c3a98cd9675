from django.urls import path
from rest_framework.routers import SimpleRouter

from generators import api

router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("generators", api.GeneratorViewSet, basename="generator")

urlpatterns = [
    *router.urls,
    path("keys/<uuid:generator_id>", api.PublicKeyView.as_view()),
]
