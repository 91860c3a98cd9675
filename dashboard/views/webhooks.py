"""Webhook endpoints: create (the secret shown once, on the page the POST redirects to), status, delete,
the delivery log and retry.

Every page checks the plan and the owner's verified email first, like every /v1/webhooks route.
"""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe

from accounts.gates import require_feature
from core.errors import ValidationFailed
from core.paging import page_number
from dashboard.access import action_lives_on, member_page
from dashboard.forms import WebhookCreateForm, WebhookStatusForm, add_service_errors
from dashboard.reveal import secret_keep, secret_take
from webhooks import selectors, services
from webhooks.delivery import delivery_retry

DELIVERIES_PER_PAGE = 25


@require_http_methods(["GET", "POST"])
@member_page
def webhooks_page(request):
    require_feature(request.org, "webhooks")
    form = WebhookCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            created = services.webhook_create(org=request.org, **form.cleaned_data)
        except ValidationFailed as error:
            add_service_errors(form, error)
        else:
            secret_keep(request, object_id=created.endpoint.pk, secret=created.secret)
            return redirect("dashboard:webhook-created", webhook_id=created.endpoint.pk)
    status = 400 if form.errors else 200
    return render(request, "dashboard/webhooks.html",
                  {"endpoints": selectors.webhook_list(org=request.org), "form": form}, status=status)


@require_safe
@never_cache  # nothing keeps the secret: no disk cache, no back-forward cache
@member_page
def webhook_created(request, webhook_id):
    """The new endpoint's signing secret, the first time this page opens after the POST; then, that it was."""
    require_feature(request.org, "webhooks")
    endpoint = selectors.webhook_get(org=request.org, webhook_id=webhook_id)
    secret = secret_take(request, object_id=endpoint.pk) if request.method == "GET" else None  # not on HEAD
    return render(request, "dashboard/webhook_created.html", {"endpoint": endpoint, "secret": secret})


@require_safe
@member_page
def webhook_page(request, webhook_id):
    require_feature(request.org, "webhooks")
    return _endpoint_page(request, selectors.webhook_get(org=request.org, webhook_id=webhook_id))


def _endpoint_page(request, endpoint, edit_form: WebhookCreateForm | None = None, status: int = 200):
    page = selectors.delivery_page(endpoint=endpoint, number=page_number(request.GET.get("page")),
                                   per_page=DELIVERIES_PER_PAGE)
    edit_form = edit_form or WebhookCreateForm(initial={"url": endpoint.url, "events": endpoint.events})
    return render(request, "dashboard/webhook.html", {"endpoint": endpoint, "page": page, "edit_form": edit_form},
                  status=status)


@require_http_methods(["GET", "POST"])
@member_page
def webhook_edit(request, webhook_id):
    """Change the URL and the subscribed events (PATCH /v1/webhooks/:id with url and events)."""
    require_feature(request.org, "webhooks")
    if request.method == "GET":
        return action_lives_on(request, "dashboard:webhook", "Change the endpoint with the form on this page.",
                               webhook_id=webhook_id)
    endpoint = selectors.webhook_get(org=request.org, webhook_id=webhook_id)
    form = WebhookCreateForm(request.POST)
    if form.is_valid():
        try:
            services.webhook_update(endpoint=endpoint, **form.cleaned_data)
        except ValidationFailed as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "The endpoint is updated.")
            return redirect("dashboard:webhook", webhook_id=endpoint.pk)
    return _endpoint_page(request, endpoint, edit_form=form, status=400)


@require_http_methods(["GET", "POST"])
@member_page
def webhook_status(request, webhook_id):
    require_feature(request.org, "webhooks")
    if request.method == "GET":
        return action_lives_on(request, "dashboard:webhook", "Turn the endpoint on or off on this page.",
                               webhook_id=webhook_id)
    endpoint = selectors.webhook_get(org=request.org, webhook_id=webhook_id)
    form = WebhookStatusForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed("Choose active or disabled.")
    services.webhook_update(endpoint=endpoint, status=form.cleaned_data["status"])
    messages.success(request, f"The endpoint is {form.cleaned_data['status']}.")
    return redirect("dashboard:webhook", webhook_id=endpoint.pk)


@require_http_methods(["GET", "POST"])
@member_page
def webhook_delete(request, webhook_id):
    require_feature(request.org, "webhooks")
    endpoint = selectors.webhook_get(org=request.org, webhook_id=webhook_id)
    if request.method == "POST":
        services.webhook_delete(endpoint=endpoint)
        messages.success(request, f"The endpoint {endpoint.url} is deleted.")
        return redirect("dashboard:webhooks")
    return render(request, "dashboard/confirm.html", {
        "title": f"Delete the endpoint {endpoint.url}?",
        "body": "Nothing more is delivered to it, and its delivery log goes with it.",
        "button": "Delete the endpoint", "cancel": "dashboard:webhooks"})


@require_http_methods(["GET", "POST"])
@member_page
def webhook_retry(request, webhook_id, delivery_id):
    require_feature(request.org, "webhooks")
    if request.method == "GET":
        return action_lives_on(request, "dashboard:webhook", "Send a delivery again from the delivery log.",
                               webhook_id=webhook_id)
    endpoint = selectors.webhook_get(org=request.org, webhook_id=webhook_id)
    delivery = delivery_retry(selectors.delivery_for_retry(org=request.org, endpoint=endpoint,
                                                           delivery_id=delivery_id))
    messages.success(request, f"Sent again: {delivery.status}"
                              f"{f' (HTTP {delivery.response_code})' if delivery.response_code else ''}.")
    return redirect("dashboard:webhook", webhook_id=endpoint.pk)
