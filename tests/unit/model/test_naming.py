"""Names derived from node ids stay valid Kubernetes names and never collide."""

from __future__ import annotations

import re

from conformance.model.naming import file_safe, is_label_value, namespace_name, sanitize_label_value

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LONG = "scenarios/allocation/test_allocation.py::test_" + "x" * 120 + "[a/b c-1]"


def test_label_values() -> None:
    assert sanitize_label_value("simple-id") == "simple-id"
    for nodeid in (LONG, "tests/x.py::test_a[1]", "::[]", "a" * 64):
        value = sanitize_label_value(nodeid)
        assert is_label_value(value), value
    assert sanitize_label_value(LONG) != sanitize_label_value(LONG.replace("c-1", "c-2"))


def test_namespace_names_are_dns_labels_and_unique() -> None:
    names = {namespace_name("20261202-101500-3fa2c1", LONG) for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert DNS_LABEL.match(name) and name.startswith("dra-3fa2c1-test-xxx")


def test_file_safe_names() -> None:
    assert file_safe("plain_name") == "plain_name"
    a, b = file_safe(LONG), file_safe(LONG.replace("c-1", "c-2"))
    assert a != b and len(a) <= 120 and "/" not in a
