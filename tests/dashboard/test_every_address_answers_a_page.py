"""Every address of the dashboard, opened with GET (the address bar, a bookmark, Back, a reload) by the
owner, a member and a visitor, answers a page: never 405, never 500.

The addresses come from dashboard/urls.py itself, filled with real ids from this organization, so a new
route is walked the day it is added (an unknown path parameter fails the test until it is given an id).
"""

import uuid
from dataclasses import dataclass

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, reverse
from django.urls import path as route
from django.views.decorators.http import require_POST

from accounts.services import api_key_create
from billing.services import plan_request_create
from config.urls import urlpatterns as site_urlpatterns
from dashboard import urls as dashboard_urls
from dashboard.access import no_dead_end
from dashboard.services import SignRequest, signed_file_create
from tests import factories
from tests.media import photo_bytes
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


@dataclass
class Ids:
    by_parameter: dict
    by_route: dict  # (route name, parameter) -> id, where a parameter means another row there


@pytest.fixture
def ids(growth_org):
    owner = factories.make_user(org=growth_org, role="owner")
    member = factories.make_user(org=growth_org, role="user")
    factories.make_personal_key(user=member)
    factories.make_personal_key(user=owner)
    org_key = api_key_create(org=growth_org, created_by=owner, name="ci").api_key
    generator = factories.make_generator(org=growth_org, formats=["image"])
    invite, token = factories.make_invite(org=growth_org, inviter=owner)
    endpoint, _ = factories.make_webhook(org=growth_org)
    delivery = WebhookDelivery.objects.create(org=growth_org, endpoint=endpoint, event="record.created",
                                              payload='{"event": "record.created"}', status="failed",
                                              response_code=500)
    signed = signed_file_create(org=growth_org, user=owner, request=SignRequest(
        generator_id=str(generator.pk), model="m", data=photo_bytes("astronaut", "png"), declared_family=None,
        upload_name="a.png"))
    plan_request = plan_request_create(org=growth_org, actor=owner, plan="scale", billing_interval="annual")
    return owner, member, Ids(
        by_parameter={"key_id": org_key.pk, "generator_id": generator.pk, "invite_id": invite.pk,
                      "user_id": member.pk, "webhook_id": endpoint.pk, "delivery_id": delivery.pk,
                      "file_id": signed.pk, "request_id": plan_request.pk, "token": token},
        by_route={("personal-key-revoke", "key_id"): owner.personal_api_keys.get().pk,
                  ("member-key-revoke", "key_id"): member.personal_api_keys.get().pk})


def _addresses(ids: Ids) -> list[tuple[str, str]]:
    """(route name, path) of every pattern in dashboard/urls.py, with real ids."""
    addresses = []
    for pattern in dashboard_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        parameters = pattern.pattern.converters
        if pattern.name is None:
            assert not parameters
            addresses.append(("(unnamed)", "/" + str(pattern.pattern)))
            continue
        kwargs = {name: ids.by_route.get((pattern.name, name), ids.by_parameter[name]) for name in parameters}
        addresses.append((pattern.name, reverse(f"dashboard:{pattern.name}", kwargs=kwargs)))
    return addresses


def _lands_on_a_page(client: Client, name: str, path: str, allowed: tuple[int, ...]) -> int:
    response = client.get(path)
    assert response.status_code in allowed, f"GET {path} ({name}) answered {response.status_code}"
    if response.status_code == 302:
        landed = client.get(response["Location"], follow=True)
        assert landed.status_code in allowed and landed.status_code != 302, f"{path} -> {response['Location']}"
        assert landed["Content-Type"].startswith("text/html")
    elif not response.get("Content-Disposition", "").startswith("attachment"):  # a download is an answer too
        assert response["Content-Type"].startswith("text/html"), f"{path}: {response['Content-Type']}"
    return response.status_code


def test_the_owner_opens_every_address_and_gets_a_page(ids, page_client):
    owner, _, known = ids
    client = page_client(owner)
    answers = {name: _lands_on_a_page(client, name, path, (200, 302)) for name, path in _addresses(known)}
    # The walk reached the pages behind the ids, not only redirects away from them.
    for name in ("generator", "webhook", "member-keys", "signed", "api-key-created", "webhook-created",
                 "api-key-revoke", "member-remove", "invite-cancel", "plan-request-cancel", "accept-invite",
                 "signed-download"):
        assert answers[name] == 200, name


def test_opening_every_address_changes_nothing(ids, page_client, growth_org):
    owner, member, known = ids
    before = _state(growth_org)
    for person in (owner, member, None):
        client = page_client(person) if person else Client()
        for _name, path in _addresses(known):
            client.get(path)
    assert _state(growth_org) == before
    assert page_client(owner).get("/dashboard").status_code == 200  # /logout opened: still signed in


def _state(org) -> dict:
    from accounts.models import ApiKey, User
    from billing.models import PlanRequest
    from generators.models import Generator
    from provenance.models import Record
    from teams.models import Invite
    from webhooks.models import WebhookEndpoint

    org.refresh_from_db()
    return {"keys": list(ApiKey.objects.for_org(org).values_list("pk", "revoked_at").order_by("pk")),
            "members": list(User.objects.for_org(org).values_list("pk", "role").order_by("pk")),
            "generators": list(Generator.objects.for_org(org).values_list("pk", "status").order_by("pk")),
            "records": Record.objects.for_org(org).count(),
            "invites": list(Invite.objects.for_org(org).values_list("pk", "accepted_at").order_by("pk")),
            "webhooks": list(WebhookEndpoint.objects.for_org(org).values_list("pk", "status", "url").order_by("pk")),
            "deliveries": list(WebhookDelivery.objects.filter(org=org).values_list("pk", "status").order_by("pk")),
            "plan requests": list(PlanRequest.objects.for_org(org).values_list("pk", "status").order_by("pk")),
            "plan": (org.plan, org.billing_interval), "two_factor": list(
                User.objects.for_org(org).values_list("two_factor_enabled", flat=True))}


def test_a_member_opens_every_address_and_gets_a_page_or_a_refusal_page(ids, page_client):
    _, member, known = ids
    client = page_client(member)
    for name, path in _addresses(known):
        _lands_on_a_page(client, name, path, (200, 302, 402, 403, 404))


def test_a_visitor_opens_every_address_and_gets_a_page_or_the_sign_in(ids):
    _, _, known = ids
    client = Client()
    for name, path in _addresses(known):
        status = _lands_on_a_page(client, name, path, (200, 302))
        if path.startswith("/dashboard"):
            assert status == 302 and client.get(path, follow=True).wsgi_request.path == "/login"


def test_an_unknown_id_in_any_address_answers_a_not_found_page(ids, page_client):
    owner, _, known = ids
    client = page_client(owner)
    unknown = Ids(by_parameter={name: uuid.uuid4() for name in known.by_parameter} | {"token": "no-such"},
                  by_route={})
    for _name, path in _addresses(unknown):
        response = client.get(path, follow=True)
        assert response.status_code in (200, 404), f"{path}: {response.status_code}"
        assert response["Content-Type"].startswith("text/html")


def _only_post(request):
    return HttpResponse("done")


urlpatterns = [route("only-post", no_dead_end(require_POST(_only_post), home="dashboard:api-keys")),
               *site_urlpatterns]


@pytest.mark.urls(__name__)
def test_a_route_that_still_answers_405_to_get_lands_on_its_home_with_a_note(owner_page):
    opened = owner_page.get("/only-post", follow=True)
    assert opened.redirect_chain == [("/dashboard/api-keys", 302)]
    assert "here is where it lives" in opened.content.decode()
    assert owner_page.post("/only-post").content == b"done"
    assert owner_page.put("/only-post").status_code == 405  # no address bar sends a PUT
