"""Organization scoping and role checks: the one place org-owned reads are narrowed."""

from rest_framework import viewsets
from rest_framework.permissions import BasePermission

from core.errors import AuthenticationRequired, Forbidden


class OrgScopedViewSet(viewsets.GenericViewSet):
    """Narrows the declared queryset to `request.org`, so another organization's id is a 404."""

    def get_queryset(self):
        return super().get_queryset().for_org(self.request.org)


class SessionRequired(BasePermission):
    """The session routes under /v1/auth (me, logout, 2fa) and /v1/team: only a session JWT is a credential.

    Auth routes take no credential but a session (spec, Authentication 3), and team routes "accept only
    a JWT session" (Authentication 4), so an API key, organization or personal, is answered like a
    missing credential: 401 `authentication_required`, not the 403 of `SessionOnly`.
    """

    def has_permission(self, request, view) -> bool:
        if request.auth is not None and not request.auth.is_session:
            raise AuthenticationRequired("This route needs a session token; API keys are not accepted.")
        return True


class SessionOnly(BasePermission):
    """Resource routes for people (api-keys): a session JWT; an API key is 403, valid but not allowed."""

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
