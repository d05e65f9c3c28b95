#!/bin/bash
# Runs once inside the node-image build container (bookworm rootfs + our binaries).
# Mirrors what kind's base image Dockerfile and node-image build do, without any registry.
set -euo pipefail

chmod 755 /kind /kind/bin
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service dra-cni.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests /opt/cni/bin /etc/cni/net.d

# CNI plugins from Debian's containernetworking-plugins, where kubelet/containerd look for them.
cp /usr/lib/cni/* /opt/cni/bin/

# The sandbox image must be the pause tag we preload.
sed -i "s|sandbox_image = .*|sandbox_image = \"${PAUSE_IMAGE}\"|" /etc/containerd/config.toml

# base OCI spec referenced by the containerd config (kind generates it the same way)
containerd --version
ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer|length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json

# Preload images into containerd's k8s.io namespace (kubelet never pulls: IfNotPresent tags).
containerd >/tmp/containerd.log 2>&1 &
for _ in $(seq 1 60); do ctr version >/dev/null 2>&1 && break; sleep 0.5; done
ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
    --all-platforms --no-unpack --digests /kind/images.tar
ctr --namespace=k8s.io images list -q
pkill containerd
for _ in $(seq 1 60); do pgrep -x containerd >/dev/null || break; sleep 0.5; done
rm -f /kind/images.tar /tmp/containerd.log
rm -rf /var/lib/kubelet/config.yaml
