"""The webhook signature and target modules are pure: importing them loads no Django."""

from tests.purity import assert_imports_without_django


def test_signing_and_targets_import_without_django():
    assert_imports_without_django(["webhooks.signing", "webhooks.targets"])
