import pytest
from django.test import Client

from accounts.models import User


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_superuser("staff@example.com", "staff-password")


@pytest.fixture
def staff_client(client: Client, staff: User) -> Client:
    client.force_login(staff)
    return client
