"""Putting a driver on a cluster the way its profile says, and checking the profile there.

| module          | owns                                                                      |
|-----------------|---------------------------------------------------------------------------|
| `installer`     | install (returning what it applied), uninstall and await a driver         |
| `manifests`     | manifest files rendered (image, dependencies first), server-side applied  |
| `helm`          | helm command lines, values with image placeholders, running helm          |
| `image`         | the driver image: built (builder, Go module, Dockerfile), put in kind     |
| `errors`        | `InstallError`, what every install step raises                            |
| `profile_check` | `profile check`: offline, against a dump of slices, or the live cluster    |
| `profile_selectors` | selectors compiled and matched as the scheduler does (conformance.cel) |
| `slices_file`   | `--slices`: a `kubectl get resourceslices -o yaml` dump read               |
| `identity`      | what an install creates, by kind/namespace/name (the security suite)      |
| `prebuild`      | the driver's image and helm built while the cluster is created           |

Applying and deleting objects: `conformance.kube.apply`; readiness: `conformance.kube.readiness`.
"""
