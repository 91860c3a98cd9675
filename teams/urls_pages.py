"""The page behind the invite link in emails (addendum section 2)."""

from django.urls import path

from teams import views

urlpatterns = [
    path("invite/<str:token>", views.accept_invite_page, name="accept-invite-page"),
]
