"""Sign up, log in (with the 2FA step), log out, forgotten password, verification email, 2FA setup."""

from django.contrib import messages
from django.contrib.auth import login, logout
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts import services
from accounts.models import User
from config.errors import EmailTaken, InvalidCredentials, OtpInvalid, ValidationFailed
from dashboard.access import member_page, public_form
from dashboard.forms import EmailForm, LoginForm, OtpForm, SignupForm
from dashboard.qr import qr_svg

CHALLENGE_SESSION_KEY = "dashboard_2fa_challenge"
NEXT_SESSION_KEY = "dashboard_next"


def _sign_in(request, user: User, next_url: str | None = None):
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # a new session key
    safe = next_url and url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure())
    return redirect(next_url if safe else "dashboard:overview")


@require_http_methods(["GET", "POST"])
@public_form
def login_page(request):
    if request.method == "GET" and request.user.is_authenticated:
        return redirect("dashboard:overview")
    form = LoginForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            result = services.session_login(**form.cleaned_data)
        except InvalidCredentials as error:
            form.add_error(None, error.message)
        else:
            next_url = request.POST.get("next") or ""
            if not result.requires_2fa:
                return _sign_in(request, result.user, next_url)
            request.session[CHALLENGE_SESSION_KEY] = result.challenge_token
            request.session[NEXT_SESSION_KEY] = next_url
            return redirect("dashboard:login-2fa")
    return render(request, "dashboard/auth/login.html", {"form": form, "next": request.GET.get("next", "")})


@require_http_methods(["GET", "POST"])
@public_form
def login_2fa_page(request):
    """The second step. The challenge burns on the first submission, right or wrong (spec): a wrong
    code sends the person back to the password step."""
    challenge = request.session.get(CHALLENGE_SESSION_KEY)
    if not challenge:
        return redirect("dashboard:login")
    form = OtpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        del request.session[CHALLENGE_SESSION_KEY]
        next_url = request.session.pop(NEXT_SESSION_KEY, "")
        try:
            result = services.two_factor_verify(challenge_token=challenge, otp=form.cleaned_data["otp"])
        except OtpInvalid:
            messages.error(request, "That code was not right. Sign in again for a new attempt.")
            return redirect("dashboard:login")
        return _sign_in(request, result.user, next_url)
    return render(request, "dashboard/auth/login_2fa.html", {"form": form})


@require_http_methods(["GET", "POST"])
@public_form
def signup_page(request):
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = services.user_register(org_name=data["org_name"], email=data["email"], password=data["password"])
        except EmailTaken as error:
            form.add_error("email", error.message)
        else:
            messages.success(request, "Your organization is ready. We sent a link to verify your email.")
            return _sign_in(request, user)
    return render(request, "dashboard/auth/signup.html", {"form": form})


@require_POST
def logout_page(request):
    logout(request)
    messages.success(request, "You are signed out.")
    return redirect("dashboard:login")


@require_http_methods(["GET", "POST"])
@public_form
def forgot_password_page(request):
    form = EmailForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.password_forgot(email=form.cleaned_data["email"])
        return render(request, "dashboard/auth/email_sent.html", {"purpose": "reset"})
    return render(request, "dashboard/auth/forgot_password.html", {"form": form})


@require_http_methods(["GET", "POST"])
@public_form
def resend_verification_page(request):
    initial = {"email": request.user.email} if request.user.is_authenticated else None
    form = EmailForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        services.verification_resend(email=form.cleaned_data["email"])
        return render(request, "dashboard/auth/email_sent.html", {"purpose": "verify"})
    return render(request, "dashboard/auth/resend_verification.html", {"form": form})


@require_safe
@member_page
def security_page(request):
    """Two-factor state: set up (QR code and secret), confirm with a code, or turn off."""
    user = request.user
    pending = None if user.two_factor_enabled else services.two_factor_pending_setup(user=user)
    context = {"form": OtpForm(), "pending": pending,
               "qr": qr_svg(pending.otpauth_url) if pending else None}
    return render(request, "dashboard/security.html", context)


@require_POST
@member_page
def two_factor_setup(request):
    services.two_factor_setup(user=request.user)
    return redirect("dashboard:security")


@require_POST
@member_page
def two_factor_enable(request):
    return _with_otp(request, services.two_factor_enable, "Two-factor sign-in is on.")


@require_POST
@member_page
def two_factor_disable(request):
    return _with_otp(request, services.two_factor_disable, "Two-factor sign-in is off.")


def _with_otp(request, service, done: str):
    form = OtpForm(request.POST)
    if form.is_valid():
        try:
            service(user=request.user, otp=form.cleaned_data["otp"])
        except (OtpInvalid, ValidationFailed) as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
    else:
        messages.error(request, "Enter the 6-digit code from your authenticator app.")
    return redirect("dashboard:security")
