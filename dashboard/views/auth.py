"""Sign up, log in (with the 2FA step), log out, forgotten password, verification email, and the
Security page: 2FA setup, recovery codes, password change."""

from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_safe

from accounts import selectors, services
from accounts.models import User
from core.errors import (
    EmailTaken,
    InvalidCredentials,
    OtpInvalid,
    RateLimited,
    RecoveryCodeUsed,
    TooManyAttempts,
    ValidationFailed,
)
from core.throttles import AuthIpThrottle
from dashboard.access import member_page, public_form
from dashboard.forms import (
    CurrentPasswordForm,
    EmailForm,
    LoginForm,
    OtpForm,
    PasswordChangeForm,
    SecondFactorForm,
    SignupForm,
)
from dashboard.qr import qr_svg

CHALLENGE_SESSION_KEY = "dashboard_2fa_challenge"
NEXT_SESSION_KEY = "dashboard_next"
RECOVERY_CODES_SESSION_KEY = "dashboard_recovery_codes"


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
    """The second step, with an authenticator code or a recovery code.

    The challenge burns on every submission, right or wrong, as on the API. After a wrong code the page
    asks the service for a successor of the same login (same expiry, once per burned challenge), so the
    person stays at this step with a message; every wrong code counts toward the account's lockout.
    """
    challenge = request.session.get(CHALLENGE_SESSION_KEY)
    if not challenge:
        return redirect("dashboard:login")
    form = SecondFactorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            result = services.two_factor_verify(challenge_token=challenge, otp=form.cleaned_data["otp"])
        except OtpInvalid as error:
            return _code_step_again(request, challenge, error)
        except TooManyAttempts:
            _forget_login(request)
            raise
        next_url = _forget_login(request)
        return _sign_in(request, result.user, next_url)
    return render(request, "dashboard/auth/login_2fa.html", {"form": form})


def _code_step_again(request, challenge: str, error: OtpInvalid):
    """Back to the code step with a fresh challenge for the same login, or to the password step when
    the login has expired; a locked account gets the 429 page."""
    try:
        request.session[CHALLENGE_SESSION_KEY] = services.two_factor_challenge_renew(challenge_token=challenge)
    except OtpInvalid as expired:
        _forget_login(request)
        messages.error(request, expired.message)
        return redirect("dashboard:login")
    except TooManyAttempts:
        _forget_login(request)
        raise
    if isinstance(error, RecoveryCodeUsed):
        messages.error(request, error.message)
    else:
        messages.error(request, "That code is not right. Check your authenticator app (or your recovery "
                                "codes) and try again.")
    return redirect("dashboard:login-2fa")


def _forget_login(request) -> str:
    """Drop the pending login from the session; returns the page to go to after it."""
    request.session.pop(CHALLENGE_SESSION_KEY, None)
    return request.session.pop(NEXT_SESSION_KEY, "")


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


@require_http_methods(["GET", "POST"])
def logout_page(request):
    """POST signs out. A GET (a bookmark, the address bar) signs nobody out, since a link must not: it
    lands on the overview, whose header has the button (or on the login page when signed out)."""
    if request.method == "GET":
        if not request.user.is_authenticated:
            return redirect("dashboard:login")
        messages.info(request, "To sign out, use the Sign out button at the top of the page.")
        return redirect("dashboard:overview")
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
    """Two-factor state (set up with a QR code and secret, confirm, turn off, recovery codes) and the
    password change."""
    return _security_page(request)


def _security_page(request, *, password_form: PasswordChangeForm | None = None,
                   codes_form: CurrentPasswordForm | None = None, status: int = 200):
    user = request.user
    pending = None if user.two_factor_enabled else services.two_factor_pending_setup(user=user)
    context = {
        "form": OtpForm(), "disable_form": SecondFactorForm(), "pending": pending,
        "qr": qr_svg(pending.otpauth_url) if pending else None,
        "codes_remaining": selectors.recovery_codes_remaining(user=user) if user.two_factor_enabled else None,
        "codes_form": codes_form or CurrentPasswordForm(prefix="codes"),
        "password_form": password_form or PasswordChangeForm(),
    }
    return render(request, "dashboard/security.html", context, status=status)


def _back_to_security(request):
    """What a GET on one of the security page's actions answers: the page itself."""
    return redirect("dashboard:security")


@require_http_methods(["GET", "POST"])
@member_page
def two_factor_setup(request):
    if request.method == "POST":
        services.two_factor_setup(user=request.user)
    return _back_to_security(request)


@require_http_methods(["GET", "POST"])
@member_page
def two_factor_enable(request):
    if request.method == "GET":
        return _back_to_security(request)
    form = OtpForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Enter the 6-digit code from your authenticator app.")
        return _back_to_security(request)
    try:
        codes = services.two_factor_enable(user=request.user, otp=form.cleaned_data["otp"])
    except (OtpInvalid, ValidationFailed) as error:
        messages.error(request, error.message)
        return _back_to_security(request)
    messages.success(request, "Two-factor sign-in is on.")
    return _show_codes_once(request, codes)


@require_http_methods(["GET", "POST"])
@member_page
def two_factor_disable(request):
    if request.method == "GET":
        return _back_to_security(request)
    form = SecondFactorForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.errors["otp"][0])
        return _back_to_security(request)
    try:
        services.two_factor_disable(user=request.user, otp=form.cleaned_data["otp"])
    except (OtpInvalid, ValidationFailed) as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Two-factor sign-in is off, and its recovery codes are deleted.")
    return _back_to_security(request)


@require_http_methods(["GET", "POST"])
@member_page
def recovery_codes_regenerate(request):
    """New recovery codes, proven by the password (it works when the phone is lost, after a sign-in
    with a recovery code); each attempt counts on the per-IP limit of the sign-in forms."""
    if request.method == "GET":
        return _back_to_security(request)
    _count_password_attempt(request)
    form = CurrentPasswordForm(request.POST, prefix="codes")
    if form.is_valid():
        try:
            codes = services.recovery_codes_regenerate(user=request.user,
                                                       password=form.cleaned_data["current_password"])
        except InvalidCredentials as error:
            form.add_error("current_password", error.message)
        else:
            messages.success(request, "New recovery codes are made; the old ones no longer work.")
            return _show_codes_once(request, codes)
    return _security_page(request, codes_form=form, status=400)


def _show_codes_once(request, codes: list[str]):
    """PRG for secrets: the codes wait in the session for the one GET that shows and forgets them."""
    request.session[RECOVERY_CODES_SESSION_KEY] = codes
    return redirect("dashboard:recovery-codes")


@require_safe
@member_page
def recovery_codes_page(request):
    """The new recovery codes, once: the first GET after they were made shows them and drops them from
    the session; a reload (or Back) finds nothing to show and says how to get new ones."""
    codes = request.session.pop(RECOVERY_CODES_SESSION_KEY, None)
    response = render(request, "dashboard/recovery_codes.html", {"codes": codes})
    response["Cache-Control"] = "no-store"  # Back must not bring the codes back from the cache
    return response


@require_http_methods(["GET", "POST"])
@member_page
def password_change(request):
    """Change the password with the current one; every other session (JWTs and other browsers) ends,
    this one stays signed in. Each attempt counts on the per-IP limit of the sign-in forms."""
    if request.method == "GET":
        return _back_to_security(request)
    _count_password_attempt(request)
    form = PasswordChangeForm(request.POST)
    if form.is_valid():
        try:
            services.password_change(user=request.user, current_password=form.cleaned_data["current_password"],
                                     new_password=form.cleaned_data["password"])
        except InvalidCredentials as error:
            form.add_error("current_password", error.message)
        else:
            update_session_auth_hash(request, request.user)  # this session stays; the others end
            messages.success(request, "Your password is changed. Every other session is signed out.")
            return _back_to_security(request)
    return _security_page(request, password_form=form, status=400)


def _count_password_attempt(request) -> None:
    """One more password guess from this address, on the sign-in forms' per-IP counter."""
    state = AuthIpThrottle().count(request)
    if not state.allowed:
        raise RateLimited(headers={"Retry-After": str(state.reset_in)})
