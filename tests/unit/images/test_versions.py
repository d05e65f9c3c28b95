from conformance import cache
from conformance.images import versions
from conformance.images.versions import NodeVersions


def test_staging_version_follows_kubernetes():
    assert NodeVersions(kubernetes="v1.37.2").staging == "v0.37.2"
    assert NodeVersions(kubernetes="v1.36.10").staging == "v0.36.10"


def test_rootfs_key_changes_with_packages_not_order():
    base = NodeVersions()
    reordered = NodeVersions(node_packages=tuple(reversed(base.node_packages)))
    more = NodeVersions(node_packages=base.node_packages + ("vim",))
    assert versions.rootfs_key(base) == versions.rootfs_key(reordered)
    assert versions.rootfs_key(base) != versions.rootfs_key(more)


def test_node_key_changes_with_any_version():
    a = versions.node_image_key(NodeVersions(), "x")
    assert a == versions.node_image_key(NodeVersions(), "x")
    assert a != versions.node_image_key(NodeVersions(containerd="v2.4.1"), "x")
    assert a != versions.node_image_key(NodeVersions(), "y")


def test_cache_root_override(monkeypatch, tmp_path):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    assert cache.cache_root() == tmp_path
