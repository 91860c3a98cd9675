"""The WSGI application: the pages' handler and the API's (a shorter middleware chain, core/api_chain.py),
split by path, behind the body read deadlines."""

import os

from django.core.wsgi import get_wsgi_application

from core.api_chain import ApiHandler, split_by_path
from core.body_timeout import with_body_timeouts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = with_body_timeouts(split_by_path(get_wsgi_application(), ApiHandler()))
