from django.urls import path

from accounts import api

api_key_list = api.ApiKeyViewSet.as_view({"get": "list", "post": "create"})
api_key_detail = api.ApiKeyViewSet.as_view({"delete": "destroy"})

urlpatterns = [
    path("auth/register", api.RegisterView.as_view()),
    path("auth/login", api.LoginView.as_view()),
    path("auth/verify-2fa", api.Verify2faView.as_view()),
    path("auth/verify-email", api.VerifyEmailView.as_view()),
    path("auth/resend-verification", api.ResendVerificationView.as_view()),
    path("auth/forgot-password", api.ForgotPasswordView.as_view()),
    path("auth/reset-password", api.ResetPasswordView.as_view()),
    path("auth/me", api.MeView.as_view()),
    path("auth/logout", api.LogoutView.as_view()),
    path("auth/2fa/setup", api.TwoFactorSetupView.as_view()),
    path("auth/2fa/enable", api.TwoFactorEnableView.as_view()),
    path("auth/2fa/disable", api.TwoFactorDisableView.as_view()),
    path("auth/2fa/recovery-codes", api.RecoveryCodesView.as_view()),
    path("api-keys", api_key_list),
    path("api-keys/<uuid:pk>", api_key_detail),
]
