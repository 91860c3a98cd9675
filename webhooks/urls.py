from rest_framework.routers import SimpleRouter

from webhooks import api

router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("webhooks", api.WebhookViewSet, basename="webhook")

urlpatterns = router.urls
