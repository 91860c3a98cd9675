"""The public verify page: drop a file, optionally paste a token, read the verdict in plain words."""

from django.shortcuts import render

from config.uploads import uploaded_bytes
from dashboard.access import upload_form, verification_form
from dashboard.forms import VerifyForm
from dashboard.verdicts import verdict_in_words
from verification.api import VERIFY_UPLOAD_LIMIT
from verification.services import content_verify


@upload_form(VERIFY_UPLOAD_LIMIT)
@verification_form
def verify_page(request):
    form = VerifyForm(request.POST or None, request.FILES or None)
    if request.method != "POST" or not form.is_valid():
        return render(request, "dashboard/verify.html", {"form": form}, status=400 if form.errors else 200)
    result = content_verify(data=uploaded_bytes(request, "content"), token=form.cleaned_data["token"] or None)
    return render(request, "dashboard/verify.html", {"form": VerifyForm(), "result": result,
                                                     "words": verdict_in_words(result)})
