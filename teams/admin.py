"""Staff screens: invites are read, never edited; the token's digest is never shown."""

from django.contrib import admin

from teams.models import Invite


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ("email", "role", "org", "created_at", "expires_at", "accepted_at")
    list_filter = ("role",)
    list_select_related = ("org",)
    search_fields = ("email", "org__name")
    fields = ("id", "org", "email", "role", "inviter", "created_at", "expires_at", "accepted_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False
