"""What every layer may record about what it does, without knowing any report format: Allure
steps and YAML attachments (a no-op when Allure is not collecting), and the redaction every
recorded text goes through. It imports nothing else of the harness.

| module   | owns                                                                         |
|----------|------------------------------------------------------------------------------|
| `steps`  | steps (`step`, `wait_step`), attachments (`attach_yaml`, `attach_text`), redacted |
| `redact` | credentials removed from everything a report carries                         |
"""
