"""Organization scoping and role checks: the one place org-owned reads are narrowed."""

from rest_framework import viewsets
from rest_framework.permissions import BasePermission

from config.errors import Forbidden


class OrgScopedViewSet(viewsets.GenericViewSet):
    """Narrows the declared queryset to `request.org`, so another organization's id is a 404."""

    def get_queryset(self):
        return super().get_queryset().for_org(self.request.org)


class SessionOnly(BasePermission):
    """Routes for people (team, account settings): a session JWT, never an API key."""

    def has_permission(self, request, view) -> bool:
        if request.auth is None or not request.auth.is_session:
            raise Forbidden("This route needs a session token; API keys are not accepted.")
        return True


def HasRole(*roles: str) -> type[BasePermission]:
    """A session whose user holds one of `roles`."""

    class _HasRole(BasePermission):
        def has_permission(self, request, view) -> bool:
            if getattr(request.user, "role", None) not in roles:
                raise Forbidden(f"This needs the role {' or '.join(roles)}.")
            return True

    _HasRole.__name__ = f"HasRole({','.join(roles)})"
    return _HasRole
