"""The public verify page: drop a file, optionally paste a token, read the verdict in plain words.

Post/redirect/get: the verification redirects to `/verify?result=<signed verdict>`, so a reload or Back
shows the verdict again without a second verification (and no second audit event or webhook for the
record's owner); the address can be bookmarked or shared for a day.
"""

from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from core.throttles import verification_charge
from core.uploads import uploaded_bytes
from dashboard.access import upload_form, verification_form
from dashboard.forms import VerifyForm
from dashboard.verdicts import verdict_from_token, verdict_in_words, verdict_token
from verification.api import VERIFY_UPLOAD_LIMIT
from verification.services import content_verify


@upload_form(VERIFY_UPLOAD_LIMIT)
@verification_form
def verify_page(request):
    if request.method != "POST":
        token = request.GET.get("result")
        verdict = verdict_from_token(token) if token else None
        return render(request, "dashboard/verify.html", {"form": VerifyForm(), "verdict": verdict,
                                                         "expired": bool(token) and verdict is None})
    form = VerifyForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "dashboard/verify.html", {"form": form}, status=400)
    result = content_verify(data=uploaded_bytes(request, "content"), token=form.cleaned_data["token"] or None,
                            charge=verification_charge(request))
    query = urlencode({"result": verdict_token(verdict_in_words(result))})
    return redirect(f"{reverse('dashboard:verify')}?{query}")
