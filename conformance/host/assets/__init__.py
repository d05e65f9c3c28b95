"""Files installed on the machine kind runs on, read as text (not imported).

| module         | owns                                                                       |
|----------------|----------------------------------------------------------------------------|
| `runc_wrapper` | the runc wrapper template for hosts without CAP_SYS_RESOURCE               |
"""
