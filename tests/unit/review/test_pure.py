"""The review modules stay pure: the blast-radius rules and the comment renderer load no SDK, so
providers, CI jobs and tests can use them without Pulumi or a network client."""

from __future__ import annotations

import pytest

from tests.unit.platform.test_pure_modules import sdks_imported_by


@pytest.mark.parametrize("module", ["components.review.blast_radius", "components.review.comment"])
def test_review_module_imports_no_sdk(module: str) -> None:
    assert sdks_imported_by(module) == []
