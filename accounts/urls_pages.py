"""Pages behind the links in emails (addendum section 2): each completes its action."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("verify-email", views.verify_email_page, name="verify-email-page"),
    path("reset-password", views.reset_password_page, name="reset-password-page"),
]
