"""Sign a file with a server-managed generator (the same service as POST /v1/sign), then download it.

Post/redirect/get: the POST signs and keeps the signed file (dashboard.models.SignedFile), then
redirects to its result page, which a reload or Back only shows again; the download streams the
kept bytes from the database as an attachment, to the member who signed, for an hour.
"""

from django.conf import settings
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_safe

from core.uploads import uploaded_bytes
from dashboard.access import member_page, upload_form
from dashboard.forms import SignForm
from dashboard.selectors import signed_file_chunks, signed_file_get
from dashboard.services import DOWNLOAD_LIFETIME, SignRequest, signed_file_create
from generators.selectors import signing_generators
from provenance.api import SIGN_UPLOAD_LIMIT


@upload_form(SIGN_UPLOAD_LIMIT)
@member_page
def sign_page(request):
    generators = signing_generators(org=request.org)
    form = SignForm(request.POST or None, request.FILES or None, generators=generators)
    if request.method != "POST" or not form.is_valid():
        status = 400 if form.errors else 200
        return render(request, "dashboard/sign.html", {"form": form, "generators": generators}, status=status)
    data = form.cleaned_data
    signed = signed_file_create(org=request.org, user=request.user, request=SignRequest(
        generator_id=data["generator"], model=data["model"], data=uploaded_bytes(request, "content"),
        declared_family=data["format"] or None, upload_name=data["content"].name, c2pa=data["c2pa"],
        visible=data["visible"]))
    return redirect("dashboard:signed", file_id=signed.pk)


@require_safe
@member_page
def signed_page(request, file_id):
    """The result of one signing: the download link, the record id and the token."""
    signed = signed_file_get(org=request.org, user=request.user, file_id=file_id)
    return render(request, "dashboard/signed.html", {
        "signed": signed, "public_base": settings.PUBLIC_BASE_URL,
        "lifetime_minutes": int(DOWNLOAD_LIFETIME.total_seconds() // 60)})


@require_safe
@member_page
def signed_download(request, file_id):
    signed = signed_file_get(org=request.org, user=request.user, file_id=file_id)
    response = StreamingHttpResponse(signed_file_chunks(signed), content_type=signed.mime_type)
    response["Content-Length"] = str(signed.size)
    response["Content-Disposition"] = content_disposition_header(True, signed.filename)
    response["Cache-Control"] = "private, no-store"
    return response
