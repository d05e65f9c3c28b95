"""What scenario tests call: workloads and checks written against the profile, never a driver.

| module         | owns                                                                     |
|----------------|--------------------------------------------------------------------------|
| `workloads`    | claims and pods in one test namespace: create, wait, read what they see  |
| `deployments`  | Deployments whose pods get claims from a ResourceClaimTemplate           |
| `placement`    | the nodes that hold node-local devices of a kind                         |
| `disruption`   | what "keeps running" means across a disruptive step                      |
| `verification` | how a container proves which devices it received                         |
| `device_reuse` | proving a released device can be allocated again                         |
| `slice_checks` | what DRA-CORE-002 demands of ResourceSlices (pure checks)                |
| `deviceplugin` | a minimal kubelet device plugin served from the harness (DRA-EXT-006)    |
"""
