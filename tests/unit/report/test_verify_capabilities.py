"""verify judges promised requirements by the profile the run embedded, not a list beside it."""

from __future__ import annotations

from conformance.report.verify import declared_capabilities


def test_the_embedded_profile_decides_what_was_promised() -> None:
    summary = {
        "driver": {
            "capabilities": [],  # edited out of the list: the profile still says it
            "profile_text": "driver: x\ncapabilities: [admin-access, opaque-config]\n",
        }
    }
    assert declared_capabilities(summary) == ("admin-access", "opaque-config")


def test_without_an_embedded_profile_the_driver_block_says() -> None:
    assert declared_capabilities({"driver": {"capabilities": ["b", "a"]}}) == ("a", "b")
    assert declared_capabilities({"driver": {"profile_text": ": not yaml ["}}) == ()
    assert declared_capabilities({}) == ()
