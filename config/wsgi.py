import os

from django.core.wsgi import get_wsgi_application

from config.body_timeout import with_body_timeouts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = with_body_timeouts(get_wsgi_application())
