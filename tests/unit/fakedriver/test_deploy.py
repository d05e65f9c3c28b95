"""The deployment manifests: identities from docs/CONTRACTS.md, least privilege,
an unprivileged DaemonSet, and the catalog ConfigMap in sync with catalog.yaml."""

from __future__ import annotations

import yaml
from fakedriver import liveness
from fakedriver.manifests import catalog_configmap

from unit.fakedriver.conftest import DRIVER, FAKE_DIR

DEPLOY = FAKE_DIR / "deploy"
NS = "dra-fake-driver"
NAME = "fake-dra-kubelet-plugin"


def load(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def by_kind(docs: list[dict]) -> dict[str, dict]:
    return {d["kind"]: d for d in docs}


def test_every_namespaced_object_is_in_the_driver_namespace():
    for path in DEPLOY.glob("*.yaml"):
        for doc in load(path.name):
            if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "DeviceClass"):
                assert doc["metadata"]["namespace"] == NS, path.name
    assert load("namespace.yaml")[0]["metadata"]["name"] == NS


def test_daemonset():
    ds = load("daemonset.yaml")[0]
    assert ds["metadata"]["name"] == NAME
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == NAME
    assert pod["serviceAccountName"] == NAME
    (container,) = pod["containers"]
    assert container["image"] == "IMAGE_PLACEHOLDER"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["command"] == ["python3", "-m", "fakedriver"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    security = container["securityContext"]
    assert security["runAsUser"] == 0
    assert security["privileged"] is False and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    # The HTTP probe asks the port the plugin serves its readiness on.
    probe = container["readinessProbe"]["httpGet"]
    assert probe["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    ready_port = next(a for a in container["args"] if a.startswith("--ready-port="))
    assert ports[probe["port"]] == int(ready_port.split("=", 1)[1])
    # Liveness on the same port: the plugin's own sockets answer within the probe's timeout.
    for kind in ("livenessProbe", "startupProbe"):
        assert container[kind]["httpGet"] == {"path": "/livez", "port": probe["port"]}
        assert container[kind]["timeoutSeconds"] > liveness.DEADLINE_SECONDS
    live = container["livenessProbe"]
    # A loaded CI machine gets a minute of failed probes before the plugin is restarted.
    assert live["periodSeconds"] * live["failureThreshold"] >= 60
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host == {
        "plugins-registry": "/var/lib/kubelet/plugins_registry",
        "plugin-dir": f"/var/lib/kubelet/plugins/{DRIVER}",
        "cdi": "/var/run/cdi",
    }
    for name, path in host.items():
        assert mounts[name] == path  # the kubelet dials the path the plugin reports
    catalog_volume = next(v for v in pod["volumes"] if v["name"] == "catalog")
    assert catalog_volume["configMap"]["name"] == "fake-dra-catalog"
    assert {"operator": "Exists"} in pod["tolerations"]


def test_rbac_is_least_privilege():
    docs = load("rbac.yaml")
    kinds = by_kind(docs)
    cluster_rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames", ()))): set(
            r["verbs"]
        )
        for r in kinds["ClusterRole"]["rules"]
    }
    claims = ("resource.k8s.io",)
    assert cluster_rules == {
        # the calls of publisher.py, and no more
        (claims, ("resourceslices",), ()): {"list", "create", "update", "delete"},
        # prepare reads the claim; binding.py watches every claim (no field selector names
        # a node or driver)
        (claims, ("resourceclaims",), ()): {"get", "list", "watch"},
        # device_status.py and binding.py: its own entries in status.devices, from the
        # claim's node only
        (claims, ("resourceclaims/status",), ()): {"patch"},
        (claims, ("resourceclaims/driver",), (DRIVER,)): {"associated-node:patch"},
        (("",), ("nodes",), ()): {"get"},
    }
    role_rules = kinds["Role"]["rules"]
    assert {
        "resourceNames": ["fake-dra-control"],
        "verbs": ["get", "list", "watch"],
    }.items() <= role_rules[0].items()
    assert role_rules[1]["verbs"] == ["create", "patch"] and role_rules[1]["resources"] == [
        "configmaps"
    ]
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        assert kinds[binding]["subjects"] == [
            {"kind": "ServiceAccount", "name": NAME, "namespace": NS}
        ]
    assert load("serviceaccount.yaml")[0]["metadata"]["name"] == NAME
    text = (DEPLOY / "rbac.yaml").read_text()
    assert "resourceclaims/binding" not in text and "arbitrary-node" not in text
    assert "secrets" not in text and '"*"' not in text


def test_device_classes():
    classes = {d["metadata"]["name"]: d["spec"] for d in load("deviceclasses.yaml")}
    assert set(classes) == {
        DRIVER,
        f"accelerator.{DRIVER}",
        f"fpga.{DRIVER}",
        f"partition.{DRIVER}",
        f"shared.{DRIVER}",
        f"fabric.{DRIVER}",
        f"accelerator-ext.{DRIVER}",
    }
    assert classes[f"accelerator-ext.{DRIVER}"]["extendedResourceName"] == f"{DRIVER}/accelerator"
    for name, spec in classes.items():
        expression = spec["selectors"][0]["cel"]["expression"]
        assert f'device.driver == "{DRIVER}"' in expression
        kind = name.split(".")[0].removesuffix("-ext")
        if name != DRIVER:
            assert f'device.attributes["{DRIVER}"].type == "{kind}"' in expression
        else:  # shared devices only in their own class: suites count the others' devices;
            # fabric devices (binding conditions) too: no other suite waits for binding
            assert f'device.attributes["{DRIVER}"].type != "shared"' in expression
            assert f'device.attributes["{DRIVER}"].type != "fabric"' in expression


def test_catalog_configmap_is_generated_from_catalog_yaml():
    committed = (DEPLOY / "catalog-configmap.yaml").read_text()
    regenerate = (
        "cd drivers/fake && python -m fakedriver.manifests --output deploy/catalog-configmap.yaml"
    )
    assert committed == catalog_configmap((FAKE_DIR / "catalog.yaml").read_text()), regenerate
    doc = yaml.safe_load(committed)
    assert doc["data"]["catalog.yaml"] == (FAKE_DIR / "catalog.yaml").read_text()


def test_image_requirements():
    lines = [
        line.split("==")[0]
        for line in (FAKE_DIR / "image-requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines == ["grpcio", "protobuf", "kubernetes", "PyYAML"]
    assert "kubernetes==37.0.2" in (FAKE_DIR / "image-requirements.txt").read_text()
