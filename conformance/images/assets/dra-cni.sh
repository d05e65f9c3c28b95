#!/bin/bash
# Minimal pod network for the offline node image (replaces kindnetd, which needs a registry):
# a ptp CNI config for this node's podCIDR, and a route to every other node's podCIDR.
# Runs as a systemd service on every node and keeps reconciling, so nodes added, deleted,
# rebooted or readdressed later still get networking. A node may list the nodes but not watch
# them, so it polls: every few seconds while the cluster forms (the first two minutes after
# this node's start) and for a minute after anything changed, otherwise every SLOW seconds.
# (A poll every few seconds throughout costs each idle cluster a tenth of a core.)
set -u
KUBECONFIG_FILE=/etc/kubernetes/kubelet.conf
CONF=/etc/cni/net.d/10-dra-conformance-ptp.conflist
NODE=$(hostname)
FAST=3
SLOW=15
FIELDS='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}'
fast_until=$((SECONDS + 120))

while true; do
  if [ -f "$KUBECONFIG_FILE" ]; then
    lines=$(kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes -o "jsonpath=$FIELDS" 2>/dev/null)
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
          fast_until=$((SECONDS + 60))
        fi
      elif [[ "$(ip route show "$cidr" 2>/dev/null)" != *"via $ip "* ]]; then
        ip route replace "$cidr" via "$ip" 2>/dev/null && echo "route to $cidr via $ip ($name)"
        fast_until=$((SECONDS + 60))
      fi
    done <<< "$lines"
  fi
  if [ "$SECONDS" -lt "$fast_until" ]; then sleep "$FAST"; else sleep "$SLOW"; fi
done
