"""Kubernetes versions (conformance/model/kube_version.py): what is read as a version, how
versions order, and how they are written back."""

from __future__ import annotations

import pytest

from conformance.model.kube_version import minor, parse, parse_minor, show


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.35.4", "1.36"),
        ("1.36", "1.36.1"),
        ("1.36.9", "1.36.10"),
        ("v1.38.0-alpha.1", "v1.38.0-alpha.2"),
        ("v1.38.0-alpha.1", "v1.38.0-beta.0"),
        ("v1.38.0-beta.0", "v1.38.0-beta.1"),
        ("v1.38.0-beta.1", "v1.38.0-rc.0"),
        ("v1.38.0-rc.1", "v1.38.0"),
        ("v1.37.9", "v1.38.0-alpha.0"),  # a pre-release is still after the previous minor
        # a CI build: commits after a pre-release tag, before the next tag
        ("v1.38.0-alpha.1", "v1.38.0-alpha.1.123+0f3c2a1"),
        ("v1.38.0-alpha.1.123+0f3c2a1", "v1.38.0-alpha.2"),
    ],
)
def test_versions_order_like_releases(lower: str, higher: str) -> None:
    low, high = parse(lower), parse(higher)
    assert low is not None and high is not None and low < high


@pytest.mark.parametrize(
    ("vendor", "release"),
    [
        ("v1.36.2-eks-3f1a", "1.36.2"),
        ("v1.36.2+k3s1", "1.36.2"),
        ("v1.30.0-gke.1200", "1.30.0"),
        ("v1.36.2", "1.36.2"),  # the v is optional
        ("1.36", "1.36.0"),  # a minor is its .0 release
        (" v1.36.2\n", "1.36.2"),  # as a file or a command prints it
    ],
)
def test_vendor_builds_and_spellings_are_the_release(vendor: str, release: str) -> None:
    assert parse(vendor) == parse(release) is not None


@pytest.mark.parametrize(
    "text",
    ["latest", "", "1", "1.2.3.4", "v1.36.x", "1.36.2-", "1.36 .2", "1.27rc1", "１.36", None, 1.36],
)
def test_anything_else_is_no_version(text: object) -> None:
    assert parse(text) is None
    assert minor(text) is None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1.36", "1.36.0"),
        ("v1.36.3", "1.36.3"),
        ("v1.38.0-beta.0", "1.38.0-beta.0"),
        ("1.38.0-alpha", "1.38.0-alpha.0"),
        ("v1.38.0-rc.2+abc", "1.38.0-rc.2"),
        ("v1.38.0-alpha.1.123+0f3c2a1", "1.38.0-alpha.1.123"),
        ("v1.36.2-eks-3f1a", "1.36.2"),
    ],
)
def test_a_version_is_written_back_as_kubernetes_writes_it(text: str, shown: str) -> None:
    version = parse(text)
    assert version is not None and show(version) == shown


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("v1.37.2", (1, 37)),
        ("v1.36.0-beta.0+abc", (1, 36)),
        ("v1.38.0-alpha.1.123+0f3c2a1", (1, 38)),
        ("1.35", (1, 35)),
        ("weird", None),
    ],
)
def test_minor_of_a_server_version(text: str, version: tuple[int, int] | None) -> None:
    assert minor(text) == version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("1.35", (1, 35)),
        ("v1.35", (1, 35)),
        ("1.35.0", None),  # a catalog's min_version names a minor, not a release
        ("1.35-eks", None),
        ("1.35+abc", None),
        (" 1.35", None),
        ("1", None),
        (1.35, None),  # unquoted YAML: a float, which would read 1.3 as 1.30
    ],
)
def test_a_minimum_version_is_exactly_a_minor(
    text: object, version: tuple[int, int] | None
) -> None:
    assert parse_minor(text) == version
