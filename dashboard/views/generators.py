"""Generators: register (server- or client-managed), formats, public keys with their kids, rotate, revoke."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from core.errors import ValidationFailed
from dashboard.access import action_lives_on, member_page
from dashboard.forms import GeneratorRegisterForm, GeneratorRotateForm, TypedConfirmationForm, add_service_errors
from generators import selectors, services
from record_format import crypto


def _supplied_key(data: dict) -> services.SuppliedPublicKey | None:
    if not data.get("public_key", "").strip():
        return None
    return services.decode_public_key(kid=data.get("kid") or None, algorithm=crypto.ALGORITHM,
                                      key_b64=data["public_key"].strip())


def _add_errors(form, error: ValidationFailed) -> None:
    add_service_errors(form, error, renamed={"key": "public_key"})  # decode_public_key names the API's field


@require_http_methods(["GET", "POST"])
@member_page
def generators_page(request):
    form = GeneratorRegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            generator = services.generator_register(org=request.org, name=data["name"], public_key=_supplied_key(data),
                                                    supported_formats=data["supported_formats"],
                                                    c2pa_signing=data["c2pa_signing"] or "ml-dsa-65")
        except ValidationFailed as error:
            _add_errors(form, error)
        else:
            messages.success(request, f"Generator {generator.name} is registered.")
            return redirect("dashboard:generator", generator_id=generator.pk)
    status = 400 if form.errors else 200
    return render(request, "dashboard/generators.html",
                  {"generators": selectors.generator_list(org=request.org), "form": form}, status=status)


@require_safe
@member_page
def generator_page(request, generator_id):
    generator = selectors.generator_get(org=request.org, generator_id=generator_id)
    return render(request, "dashboard/generator.html", {"generator": generator, "rotate_form": GeneratorRotateForm()})


@require_http_methods(["GET", "POST"])
@member_page
def generator_rotate(request, generator_id):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:generator", "Rotate the key with the form on this page.",
                               generator_id=generator_id)
    generator = selectors.generator_get(org=request.org, generator_id=generator_id)
    form = GeneratorRotateForm(request.POST)
    if form.is_valid():
        try:
            key = services.generator_rotate_key(generator=generator, public_key=_supplied_key(form.cleaned_data))
        except ValidationFailed as error:
            _add_errors(form, error)
        else:
            messages.success(request, f"New signatures now use key {key.kid}.")
            return redirect("dashboard:generator", generator_id=generator.pk)
    return render(request, "dashboard/generator.html", {"generator": generator, "rotate_form": form}, status=400)


@require_http_methods(["GET", "POST"])
@member_page
def generator_revoke(request, generator_id):
    generator = selectors.generator_get(org=request.org, generator_id=generator_id)
    form = TypedConfirmationForm(request.POST or None, expected=generator.name)
    if request.method == "POST" and form.is_valid():
        services.generator_revoke(generator=generator)
        messages.success(request, f"Generator {generator.name} is revoked; its signatures no longer verify.")
        return redirect("dashboard:generator", generator_id=generator.pk)
    status = 400 if form.errors else 200
    return render(request, "dashboard/generator_revoke.html", {"generator": generator, "form": form}, status=status)
