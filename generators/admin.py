"""Read-mostly admin: private key material is never displayed; revoke goes through the service."""

from django.contrib import admin

from generators.models import Generator, GeneratorKey
from generators.services import generator_revoke


class GeneratorKeyInline(admin.TabularInline):
    model = GeneratorKey
    fields = ("kid", "algorithm", "created_at", "retired_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Generator)
class GeneratorAdmin(admin.ModelAdmin):
    list_display = ("name", "org", "mode", "status", "created_at")
    list_filter = ("mode", "status", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("org",)
    search_fields = ("name", "id", "org__name", "org__id")
    fields = ("id", "org", "name", "mode", "status", "supported_formats", "created_at", "revoked_at")
    readonly_fields = fields
    inlines = [GeneratorKeyInline]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # its records would go with it; revoking is how a generator ends

    @admin.action(description="Revoke selected generators (final)")
    def revoke(self, request, queryset) -> None:
        for generator in queryset.select_related("org"):
            generator_revoke(generator=generator)
        self.message_user(request, f"Revoked {queryset.count()} generator(s).")
