"""The fake driver's client side: what runs outside the plugin pod and speaks to the driver
through its control channel (the `fake-dra-control` ConfigMap in, `fake-dra-status-<node>` out).

| module         | owns                                                                     |
|----------------|--------------------------------------------------------------------------|
| `channel`      | `FakeDriverControl`: set and revert faults, read what the driver applied |
| `faults`       | `FakeDriverFaults`: the suite's fault plug-in (profile method `python`)  |
| `faultctl`     | `python -m fakedriver.client.faultctl`: the same as a command line       |
| `records`      | which run injected each fault (the control ConfigMap's annotation)       |
| `status_reads` | the status ConfigMaps as the client reads them                           |

The driver itself (everything beside this package) never imports it; both share the control
document's format, `fakedriver.controls`.
"""
