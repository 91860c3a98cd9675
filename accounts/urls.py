from django.urls import path

from accounts import api

api_key_list = api.ApiKeyViewSet.as_view({"get": "list", "post": "create"})
api_key_detail = api.ApiKeyViewSet.as_view({"delete": "destroy"})

# Two prefixes, each declared where config/urls.py includes its list: auth/ and api-keys.
auth = [
    path("register", api.RegisterView.as_view()),
    path("login", api.LoginView.as_view()),
    path("verify-2fa", api.Verify2faView.as_view()),
    path("verify-email", api.VerifyEmailView.as_view()),
    path("resend-verification", api.ResendVerificationView.as_view()),
    path("forgot-password", api.ForgotPasswordView.as_view()),
    path("reset-password", api.ResetPasswordView.as_view()),
    path("me", api.MeView.as_view()),
    path("logout", api.LogoutView.as_view()),
    path("2fa/setup", api.TwoFactorSetupView.as_view()),
    path("2fa/enable", api.TwoFactorEnableView.as_view()),
    path("2fa/disable", api.TwoFactorDisableView.as_view()),
    path("2fa/recovery-codes", api.RecoveryCodesView.as_view()),
]

api_keys = [
    path("", api_key_list),
    path("/<uuid:pk>", api_key_detail),
]
