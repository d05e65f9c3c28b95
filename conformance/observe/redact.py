"""Remove credentials from text that goes into reports: tokens, bearer strings, keys, passwords.

Used by the evidence bundle for every text file, and available to whatever writes diagnostics
(kubeconfigs, pod specs, logs) so that no report carries a secret.
"""

from __future__ import annotations

import re
from pathlib import Path

REDACTED = "<redacted>"
REDACTED_XML = "&lt;redacted&gt;"  # the marker inside XML text

# Order matters: whole blocks first, then key/value forms, then free-standing token shapes.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # PEM private keys (any kind)
    (
        re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----"),
        f"-----BEGIN \\1PRIVATE KEY-----{REDACTED}-----END \\1PRIVATE KEY-----",
    ),
    # HTTP authorization headers and bearer strings
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1\2{REDACTED}"),
    # kubeconfig / YAML / JSON / env / flag forms: key: value, "key": "value", key=value (also
    # inside JSON-escaped strings: \"token\": \"value\")
    (
        re.compile(
            r"""(?ix)
            ((?:\\?["'])?
              (?:client-key-data|client-key|client-certificate-data|token|id-token|
                 refresh-token|access-token|auth-token|api-key|apikey|password|passwd|
                 secret|[a-z0-9_.-]*(?:_token|-token|_secret|-secret|_password|-password))
            (?:\\?["'])?)
            (\s*[:=]\s*|\s+(?=\\?["']))
            ((?:\\?["'])?)
            # true, false, null: no secret (a feature gate named ...Token), and must stay JSON
            (?!(?:true|false|null)\b)
            ([^\s"'\\,}]+)
            """
        ),
        rf"\1\2\3{REDACTED}",
    ),
    # command-line flags: --token VALUE, --password VALUE, and the same argv as a YAML list
    # (`- --token` then `- VALUE`) or a JSON array (`"--token", "VALUE"`)
    (
        re.compile(
            r"""(?ix)
            (--(?:token|password|client-key|[a-z-]*-token|[a-z-]*-password))
            ((?:\\?["'])?(?:\s*,\s*|\s+)(?:-\s+)?(?:\\?["'])?)
            ([^\s"'\\,\]]+)
            """
        ),
        rf"\1\2{REDACTED}",
    ),
    # JSON Web Tokens (service-account tokens) wherever they appear
    (
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
        REDACTED,
    ),
    # kubeadm bootstrap tokens
    (re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b"), REDACTED),
]


def redact_text(text: str) -> str:
    """`text` with every credential-looking value replaced by `<redacted>`."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_text_of(name: str, text: str) -> str:
    """`redact_text` for the content of file `name`: in XML the marker is escaped, so the file
    stays well-formed, also when it was redacted before (a marker found again is escaped again,
    never left as a raw tag)."""
    cleaned = redact_text(text)
    if name.endswith(".xml"):
        cleaned = cleaned.replace(REDACTED, REDACTED_XML)
    return cleaned


def find_secrets(text: str) -> list[str]:
    """The credential-looking strings `redact_text` would remove (for checks and tests)."""
    found: list[str] = []
    for pattern, _ in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0)
            if REDACTED not in value:
                found.append(value)
    return found


def redact_file(path: Path) -> bool:
    """Redact a UTF-8 text file in place (binary files are left alone); True if it changed."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    cleaned = redact_text_of(path.name, text)
    if cleaned == text:
        return False
    path.write_text(cleaned, encoding="utf-8")
    return True


def redact_tree(root: Path) -> list[Path]:
    """Redact every text file under `root` (or `root` itself) in place; the changed files."""
    root = Path(root)
    if root.is_symlink() or not root.exists():
        return []
    files = [root] if root.is_file() else sorted(root.rglob("*"))
    return [f for f in files if f.is_file() and not f.is_symlink() and redact_file(f)]
