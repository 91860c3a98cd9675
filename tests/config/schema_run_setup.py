"""Run as a separate process: migrate a fresh database and create the caller schemathesis acts as.

Prints a JSON object with an organization API key and a session JWT of its owner (enterprise plan,
so the per-organization limit never trips).
"""

import json
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> dict:
    django.setup()
    from django.core.management import call_command

    from tests import factories

    call_command("migrate", verbosity=0)
    org = factories.make_org(plan="enterprise", name="Schemathesis")
    owner = factories.make_user(org=org, role="owner")
    factories.make_generator(org=org, name="server-gen")
    factories.make_client_generator(org=org)
    return {"key": factories.make_api_key(org=org), "token": factories.session_token(owner)}


if __name__ == "__main__":
    print(json.dumps(main()))
