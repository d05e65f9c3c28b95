"""Names and label values the harness derives from run ids and test node ids.

Kubernetes limits: namespace names are DNS labels (<= 63, [a-z0-9-]); label values are
<= 63 chars of [A-Za-z0-9_.-] starting and ending alphanumeric. Node ids from parametrize
(`test_x[a/b c]`) violate both, which broke kubetest (#105, #146) - so every name goes
through here, and truncation keeps a hash so two long ids never collide.
"""

from __future__ import annotations

import hashlib
import re
import secrets

RUN_LABEL = "dra-conformance.io/run"
TEST_LABEL = "dra-conformance.io/test"
# Set on nodes a test cordons, so the end-of-run sweep can uncordon them if the test dies.
CORDONED_BY_LABEL = "dra-conformance.io/cordoned-by-run"

_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _digest(text: str, length: int = 8) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:length]


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE_RE.match(value))


def sanitize_label_value(text: str) -> str:
    """A valid label value for `text`, unique per input (hash suffix when changed or cut)."""
    if is_label_value(text):
        return text
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-")
    cleaned = cleaned[:54].rstrip("_.-")
    return f"{cleaned}-{_digest(text)}" if cleaned else _digest(text)


def _dns_part(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def namespace_name(run_id: str, nodeid: str) -> str:
    """`dra-<run tail>-<test name>-<random>`: readable in kubectl, unique across workers."""
    test_name = nodeid.rsplit("::", 1)[-1]
    run_dns = _dns_part(run_id)
    # Default ids end in a random segment; that is the readable, distinguishing part.
    run_part = (run_dns if len(run_dns) <= 8 else run_dns.split("-")[-1][-8:]) or "run"
    test_part = _dns_part(test_name)[:36].strip("-") or "test"
    # Random, not a timestamp: two xdist workers may start the same second (kubetest's bug).
    return f"dra-{run_part}-{test_part}-{secrets.token_hex(3)}"


def file_safe(nodeid: str) -> str:
    """A directory name for a test's diagnostics: readable, bounded, collision-free."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_.")
    if len(cleaned) > 120 or cleaned != nodeid:
        return f"{cleaned[:110]}-{_digest(nodeid)}"
    return cleaned
