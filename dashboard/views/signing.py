"""Sign a file with a server-managed generator: the same service as POST /v1/sign."""

import base64

from django.conf import settings
from django.shortcuts import render

from config.uploads import uploaded_bytes
from dashboard.access import member_page, upload_form
from dashboard.forms import SignForm
from generators.selectors import signing_generators
from provenance.api import SIGN_UPLOAD_LIMIT
from provenance.signing import content_sign


@upload_form(SIGN_UPLOAD_LIMIT)
@member_page
def sign_page(request):
    generators = signing_generators(org=request.org)
    form = SignForm(request.POST or None, request.FILES or None, generators=generators)
    if request.method != "POST" or not form.is_valid():
        status = 400 if form.errors else 200
        return render(request, "dashboard/sign.html", {"form": form, "generators": generators}, status=status)
    data = form.cleaned_data
    signed = content_sign(org=request.org, generator_id=data["generator"], model=data["model"],
                          data=uploaded_bytes(request, "content"), declared_family=data["format"] or None)
    # The signed bytes are kept nowhere: the page carries them as its download link.
    download = f"data:{signed.codec.mime_type};base64,{base64.b64encode(signed.data).decode()}"
    return render(request, "dashboard/signed.html", {
        "signed": signed, "download": download, "filename": f"signed-{data['content'].name}",
        "public_base": settings.PUBLIC_BASE_URL}, status=201)
