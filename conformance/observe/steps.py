"""Allure steps and attachments for the scenario library: what a reader of the report sees.

- `step(title)`: an Allure step around an action ("create claim ns/name"); an exception inside
  marks the step failed (an AssertionError) or broken (anything else) and propagates. A no-op
  when Allure is not collecting (no `--alluredir`: unit tests, plain `pytest`), and off the main
  thread (allure-python keeps its test context per thread and fails on a thread with none).
- `wait_step(describe)`: the step of a wait ("wait for <describe>"), left out inside a step that
  is itself the wait (`step(..., is_wait=True)`), so a reader sees one step, not two.
- `recording()`: whether Allure results are being written in this process, so that an
  attachment is only built (objects listed, serialised) when somebody will read it.
- `attach_yaml(name, obj)`: a Kubernetes object (or a callable making one) as a YAML
  attachment: managedFields and last-applied annotations dropped, Secret data never included,
  credentials redacted (conformance.observe.redact), cut to `ATTACHMENT_LIMIT` characters.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any

import allure
import yaml
from allure_commons import plugin_manager

from conformance.observe.redact import redact_text

ATTACHMENT_LIMIT = 20000  # characters of YAML per attachment: enough for a claim, pod or slice
TITLE_LIMIT = 200
_NOISY_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_SECRET_FIELDS = ("data", "stringData")
# (title of the innermost step, whether it is a wait) in this context
_CURRENT: contextvars.ContextVar[tuple[str, bool]] = contextvars.ContextVar(
    "dra_allure_step", default=("", False)
)


def recording() -> bool:
    """True when a listener records steps and attachments (allure-pytest with a results dir)."""
    return threading.current_thread() is threading.main_thread() and bool(
        plugin_manager.hook.attach_data.get_hookimpls()
    )


@contextlib.contextmanager
def step(title: str, *, is_wait: bool = False) -> Iterator[None]:
    """An Allure step named `title` (cut to `TITLE_LIMIT`) around the block. A step inside a
    step of the same title is left out (a wrapper calling the object it wraps)."""
    if len(title) > TITLE_LIMIT:
        title = title[: TITLE_LIMIT - 3] + "..."
    if not recording() or _CURRENT.get()[0] == title:
        yield
        return
    token = _CURRENT.set((title, is_wait))
    try:
        with allure.step(title):
            yield
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def wait_step(describe: str) -> Iterator[None]:
    """The step "wait for <describe>", unless the innermost step already is that wait."""
    if _CURRENT.get()[1]:
        yield
        return
    with step(f"wait for {describe}", is_wait=True):
        yield


def slim(value: Any) -> Any:
    """`value` without managedFields, last-applied annotations, None fields or Secret data."""
    if isinstance(value, dict):
        out = {}
        is_secret = value.get("kind") == "Secret"
        for key, item in value.items():
            if item is None or key == "managedFields":
                continue
            if is_secret and key in _SECRET_FIELDS:
                out[key] = "<not attached>"
                continue
            if key == "annotations" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k not in _NOISY_ANNOTATIONS}
            out[key] = slim(item)
        return out
    if isinstance(value, list | tuple):
        return [slim(v) for v in value]
    return value


def render_yaml(obj: Any) -> str:
    """The attachment text of `obj`: slimmed, redacted YAML, at most `ATTACHMENT_LIMIT` long."""
    text = yaml.safe_dump(slim(obj), default_flow_style=False, sort_keys=False, width=100)
    text = redact_text(text)
    if len(text) > ATTACHMENT_LIMIT:
        cut = len(text) - ATTACHMENT_LIMIT
        text = text[:ATTACHMENT_LIMIT] + f"\n# ... {cut} more characters not attached\n"
    return text


def attach_yaml(name: str, obj: Any | Callable[[], Any]) -> None:
    """Attach `obj` (or what the callable returns, called only when recording) as YAML.

    Never fails the test: an attachment that cannot be built is replaced by a line saying why.
    """
    if not recording():
        return
    try:
        text = render_yaml(obj() if callable(obj) else obj)
    except Exception as exc:  # noqa: BLE001 - a report detail must not change the outcome
        text = f"# could not build this attachment: {type(exc).__name__}: {exc}\n"
    allure.attach(text, name=name, attachment_type=allure.attachment_type.YAML)


def attach_text(name: str, text: str) -> None:
    """Attach plain text (already built: a figure table), redacted; a no-op when not recording."""
    if recording():
        allure.attach(redact_text(text), name=name, attachment_type=allure.attachment_type.TEXT)
