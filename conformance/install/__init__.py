"""Putting a driver on a cluster the way its profile says, and checking the profile there.

| module          | owns                                                                    |
|-----------------|-------------------------------------------------------------------------|
| `installer`     | install, uninstall and await a driver (manifests, helm, preinstalled)   |
| `profile_check` | `profile check`: does the live cluster agree with the profile?          |
"""
