"""The dashboard's forms: the shape of each submission, like the API's input serializers. Rules that
read the database (roles, quotas, ownership) stay in the services the views call."""

from datetime import UTC, date, datetime, time, timedelta

from django import forms

from accounts.credentials import normalize_recovery_code
from accounts.models import Role
from accounts.plans import BILLING_INTERVALS, PLANS
from accounts.serializers import PASSWORD_MAX, PASSWORD_MIN
from audit.models import AuditEvent
from audit.selectors import AuditFilter
from audit.wording import type_label
from core.errors import ValidationFailed
from generators.serializers import KID_PATTERN
from media_codecs import FAMILIES
from teams.serializers import INVITABLE_ROLES
from webhooks.events import EVENT_KINDS
from webhooks.serializers import MAX_URL_LENGTH

OTP_FIELD = {"min_length": 6, "max_length": 6, "label": "6-digit code from your authenticator app",
             "widget": forms.TextInput(attrs={"inputmode": "numeric", "autocomplete": "one-time-code",
                                              "pattern": "[0-9]{6}"})}
FAMILY_CHOICES = [(family, family) for family in FAMILIES]


def _password(label: str, autocomplete: str) -> forms.CharField:
    return forms.CharField(label=label, min_length=PASSWORD_MIN, max_length=PASSWORD_MAX, strip=False,
                           widget=forms.PasswordInput(attrs={"autocomplete": autocomplete}))


class LoginForm(forms.Form):
    email = forms.CharField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(max_length=PASSWORD_MAX, strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))


class OtpForm(forms.Form):
    otp = forms.RegexField(regex=r"^\d{6}$", **OTP_FIELD)


class SecondFactorForm(forms.Form):
    """An authenticator code or a recovery code (the login's code step, turning 2FA off)."""

    otp = forms.CharField(
        label="Code from your authenticator app, or a recovery code", max_length=32,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autocapitalize": "off",
                                      "spellcheck": "false"}))

    def clean_otp(self):
        code = self.cleaned_data["otp"].strip()
        if not (len(code) == 6 and code.isascii() and code.isdigit()) and normalize_recovery_code(code) is None:
            raise forms.ValidationError(
                "Enter the 6-digit code from your authenticator app, or a recovery code like abcd-efgh-jkmn-pqrs.")
        return code


class CurrentPasswordForm(forms.Form):
    current_password = forms.CharField(
        label="Your current password", max_length=PASSWORD_MAX, strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))


class NewPasswordForm(forms.Form):
    password = _password(f"Password ({PASSWORD_MIN} to {PASSWORD_MAX} characters)", "new-password")
    password_confirm = forms.CharField(label="Repeat the password", max_length=PASSWORD_MAX, strip=False,
                                       widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password") != data.get("password_confirm"):
            raise forms.ValidationError("The two passwords differ.")
        return data


class PasswordChangeForm(CurrentPasswordForm, NewPasswordForm):
    field_order = ["current_password", "password", "password_confirm"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["password"].label = f"New password ({PASSWORD_MIN} to {PASSWORD_MAX} characters)"
        self.fields["password_confirm"].label = "Repeat the new password"


class SignupForm(NewPasswordForm):
    org_name = forms.CharField(label="Organization name", max_length=200)
    email = forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    field_order = ["org_name", "email", "password", "password_confirm"]


class EmailForm(forms.Form):
    email = forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(label="Name (what uses this key)", max_length=100, required=False)


class GeneratorRegisterForm(forms.Form):
    name = forms.CharField(max_length=200)
    supported_formats = forms.MultipleChoiceField(
        label="Formats it may sign", choices=FAMILY_CHOICES, initial=list(FAMILIES),
        widget=forms.CheckboxSelectMultiple)
    public_key = forms.CharField(
        label="Public key (base64 ML-DSA-65, 1952 bytes). Leave empty and the service makes and keeps the keypair",
        required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 4}))
    kid = forms.RegexField(label="Key id (optional; derived from the key when empty)", regex=KID_PATTERN,
                           required=False)
    c2pa_signing = forms.ChoiceField(
        label="C2PA manifests signed with", initial="ml-dsa-65", widget=forms.RadioSelect, required=False,
        choices=[("ml-dsa-65", "ML-DSA-65 alone (post-quantum; today's Content Credentials readers cannot check it)"),
                 ("hybrid", "Hybrid: ES256, which every Content Credentials reader checks, countersigned with "
                            "ML-DSA-65 (service-held keys only)")])


class GeneratorRotateForm(forms.Form):
    """Client-managed generators send their new public key; server-managed ones send nothing."""

    public_key = forms.CharField(label="New public key (base64 ML-DSA-65)", required=False, max_length=4000,
                                 widget=forms.Textarea(attrs={"rows": 4}))
    kid = forms.RegexField(label="Key id of the new key (optional)", regex=KID_PATTERN, required=False)


class TypedConfirmationForm(forms.Form):
    """Revoking cannot be undone: the person types the name of what goes."""

    confirmation = forms.CharField(max_length=200)

    def __init__(self, *args, expected: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.expected = expected
        self.fields["confirmation"].label = f"Type {expected} to confirm"

    def clean_confirmation(self):
        if self.cleaned_data["confirmation"].strip() != self.expected:
            raise forms.ValidationError("That is not the name; nothing was revoked.")
        return self.cleaned_data["confirmation"]


class SignForm(forms.Form):
    generator = forms.ChoiceField(label="Generator (server-managed)")
    model = forms.CharField(label="Model name", max_length=200)
    format = forms.ChoiceField(label="Format (detected from the file when left on auto)", required=False,
                               choices=[("", "auto"), *FAMILY_CHOICES])
    content = forms.FileField(label="File to sign (at most 50 MB)")
    c2pa = forms.BooleanField(label="Also embed a C2PA manifest (Content Credentials; Growth plan and above; JPEG, "
                                    "PNG, WebP, WAV, MP3, FLAC, MP4, MOV, PDF)", required=False)
    visible = forms.BooleanField(label="Add the visible AI label (images, plain text, HTML)", required=False)

    def __init__(self, *args, generators, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["generator"].choices = [(str(g.pk), g.name) for g in generators]


class InviteForm(forms.Form):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=[(role, role) for role in INVITABLE_ROLES])


class RoleForm(forms.Form):
    role = forms.ChoiceField(label="New role", choices=[(role, role) for role in Role.values])


class WebhookCreateForm(forms.Form):
    url = forms.CharField(label="Endpoint URL (https://)", max_length=MAX_URL_LENGTH,
                          widget=forms.URLInput(attrs={"placeholder": "https://example.com/hooks"}))
    events = forms.MultipleChoiceField(choices=[(kind, kind) for kind in EVENT_KINDS],
                                       widget=forms.CheckboxSelectMultiple)


class WebhookStatusForm(forms.Form):
    status = forms.ChoiceField(choices=[("active", "active"), ("disabled", "disabled")])


class AuditFilterForm(forms.Form):
    """The audit page's filters, sent by GET: a type and a range of whole days in UTC, both ends included."""

    type = forms.ChoiceField(label="Event", required=False,
                             choices=[("", "All events"), *((t, type_label(t)) for t in AuditEvent.Type.values)])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)
        _add_day_range(self)

    def clean(self):
        data = super().clean()
        if data.get("from") and data.get("to") and data["to"] < data["from"]:
            self.add_error("to", "The last day is before the first.")
        return data

    def audit_filter(self) -> AuditFilter:
        """The valid filters as the selectors take them: from midnight of the first day to midnight after the last."""
        first, last = self.cleaned_data.get("from"), self.cleaned_data.get("to")
        return AuditFilter(type=self.cleaned_data.get("type") or None,
                           since=datetime.combine(first, time(), UTC) if first else None,
                           until=datetime.combine(last + timedelta(days=1), time(), UTC)
                           if last and last < date.max else None)


def _add_day_range(form: forms.Form) -> None:
    """The `from` and `to` day fields of a page's period (UTC, both days included), optional."""
    # `from` is a Python keyword; the names match the API's parameters, so links and bookmarks read alike.
    form.fields["from"] = forms.DateField(label="From (UTC)", required=False,
                                          widget=forms.DateInput(attrs={"type": "date"}))
    form.fields["to"] = forms.DateField(label="To (UTC, included)", required=False,
                                        widget=forms.DateInput(attrs={"type": "date"}))


class ComplianceReportForm(forms.Form):
    """The compliance page's period, sent by GET: whole days in UTC, both ends included; by default the 30 days
    ending today."""

    DAYS = 30

    def __init__(self, *args, today: date, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)
        self.today = today
        _add_day_range(self)

    def clean(self):
        data = super().clean()
        last = data.get("to") or self.today
        if last >= date.max:
            self.add_error("to", "Choose a day before 9999-12-31.")
        elif data.get("from") and last < data["from"]:
            self.add_error("to", "The last day is before the first.")
        return data

    def days(self) -> tuple[date, date]:
        """The first and the last day of the valid period, the defaults filled in."""
        last = self.cleaned_data.get("to") or self.today
        first = self.cleaned_data.get("from") or date.fromordinal(max(1, last.toordinal() - (self.DAYS - 1)))
        return first, last

    def bounds(self) -> tuple[datetime, datetime]:
        """The valid period as instants: midnight UTC of the first day to midnight after the last."""
        first, last = self.days()
        return datetime.combine(first, time(), UTC), datetime.combine(last + timedelta(days=1), time(), UTC)


class VerifyForm(forms.Form):
    content = forms.FileField(label="File to check (image, audio, text or video, at most 50 MB)")
    token = forms.CharField(label="Token (optional: a svc_ token you were given with the file)", max_length=256,
                            required=False)


class PlanRequestForm(forms.Form):
    plan = forms.ChoiceField(choices=[(plan.name, plan.label) for plan in PLANS.values()])
    billing_interval = forms.ChoiceField(label="Billed", choices=[(i, i) for i in BILLING_INTERVALS],
                                         widget=forms.RadioSelect)


def add_service_errors(form: forms.Form, error: ValidationFailed, *, renamed: dict[str, str] | None = None) -> None:
    """A service's ValidationFailed shown on the form that sent it: each detail on the field of its name (`renamed`
    maps the API's name to the form's), one that names no field above the form, and so the message without details."""
    for name, problems in (error.details or {None: [error.message]}).items():
        field = (renamed or {}).get(name, name)
        for problem in problems:
            form.add_error(field if field in form.fields else None, problem)
