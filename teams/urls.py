from django.urls import path

from teams import api

member_list = api.MemberViewSet.as_view({"get": "list"})
member_detail = api.MemberViewSet.as_view({"delete": "destroy"})
member_role = api.MemberViewSet.as_view({"patch": "role"})
my_api_keys = api.MemberApiKeyViewSet.as_view({"get": "list"})
member_api_keys = api.MemberApiKeyViewSet.as_view({"post": "create"})
member_api_key_detail = api.MemberApiKeyViewSet.as_view({"delete": "destroy"})
invite_list = api.InviteViewSet.as_view({"get": "list", "post": "create"})
invite_detail = api.InviteViewSet.as_view({"delete": "destroy"})

urlpatterns = [
    path("members", member_list),
    path("members/me/api-keys", my_api_keys),
    path("members/<uuid:user_id>", member_detail),
    path("members/<uuid:user_id>/role", member_role),
    path("members/<uuid:user_id>/api-keys", member_api_keys),
    path("members/<uuid:user_id>/api-keys/<uuid:key_id>", member_api_key_detail),
    path("invites", invite_list),
    path("invites/<uuid:invite_id>", invite_detail),
    path("invites/<str:token>/preview", api.InvitePreviewView.as_view()),
    path("invites/<str:token>/accept", api.InviteAcceptView.as_view()),
]
