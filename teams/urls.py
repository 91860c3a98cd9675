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
    path("team/members", member_list),
    path("team/members/me/api-keys", my_api_keys),
    path("team/members/<uuid:user_id>", member_detail),
    path("team/members/<uuid:user_id>/role", member_role),
    path("team/members/<uuid:user_id>/api-keys", member_api_keys),
    path("team/members/<uuid:user_id>/api-keys/<uuid:key_id>", member_api_key_detail),
    path("team/invites", invite_list),
    path("team/invites/<uuid:invite_id>", invite_detail),
    path("team/invites/<str:token>/preview", api.InvitePreviewView.as_view()),
    path("team/invites/<str:token>/accept", api.InviteAcceptView.as_view()),
]
