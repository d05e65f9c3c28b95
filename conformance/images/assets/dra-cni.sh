#!/bin/bash
# Minimal pod network for the offline node image (replaces kindnetd, which needs a registry):
# a ptp CNI config for this node's podCIDR, and a route to every other node's podCIDR.
# Runs as a systemd service on every node and keeps reconciling, so nodes added, deleted or
# rebooted later still get networking.
set -u
KUBECONFIG_FILE=/etc/kubernetes/kubelet.conf
CONF=/etc/cni/net.d/10-dra-conformance-ptp.conflist
NODE=$(hostname)
while true; do
  if [ -f "$KUBECONFIG_FILE" ]; then
    lines=$(kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes -o \
      jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null)
    while read -r name cidr ip; do
      [ -n "${cidr:-}" ] && [ -n "${ip:-}" ] || continue
      if [ "$name" = "$NODE" ]; then
        want=$(cat <<JSON
{"cniVersion":"1.0.0","name":"dra-conformance","plugins":[{"type":"ptp","ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"$cidr"}]],"routes":[{"dst":"0.0.0.0/0"}]},"mtu":1500},{"type":"portmap","capabilities":{"portMappings":true}}]}
JSON
)
        if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
          echo "$want" > "$CONF.tmp" && mv "$CONF.tmp" "$CONF"
          echo "wrote $CONF for $cidr"
        fi
      else
        ip route replace "$cidr" via "$ip" 2>/dev/null
      fi
    done <<< "$lines"
  fi
  sleep 3
done
