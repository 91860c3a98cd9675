"""The test settings: the project's settings in development mode (addendum section 8).

pytest-django imports this module before any conftest, so DEBUG is in the environment before
config.settings reads it; the suite then runs with nothing else set, like `make run`. (pytest-django
still forces settings.DEBUG off while tests run; DEBUG here only lifts the refusal of development secrets.)
The variable stays in the environment, so processes the tests start inherit it.
"""

import os

os.environ.setdefault("DEBUG", "true")

from config.settings import *  # noqa: F403
