"""Fake DRA driver for dra-conformance: a real kubelet plugin with fault injection."""

DRIVER_NAME = "fake.dra-conformance.io"
# CDI kind "<vendor>/<class>"; devices are named "<claimUID>-<device>".
CDI_KIND = f"{DRIVER_NAME}/device"
