#!/usr/bin/env bash
# Installs what dra-conformance needs on a fresh Debian/Ubuntu machine, idempotently:
# system packages (Docker engine, debootstrap, CNI plugins, busybox, gcc, chromium), a Python
# virtualenv with the project, and the Allure report generator from npm. Expensive build
# outputs (Go builds, node image) are cached under ~/.cache/dra-conformance by the tool itself.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[bootstrap %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

APT_PACKAGES=(docker.io debootstrap containernetworking-plugins busybox-static gcc libc6-dev
              chromium git make)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "missing system packages: ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  say "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
  echo "the Go toolchain (>= 1.26) is needed to build the offline node image; install it and retry" >&2
  exit 1
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "Node.js and npm are needed to generate the Allure HTML report; install them and retry" >&2
  exit 1
fi

VENV=${DRA_CONFORMANCE_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  say "create virtualenv $VENV"
  python3 -m venv "$VENV"
fi
stamp="$VENV/.installed-$(sha256sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  say "pip install -e .[dev]"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[dev]'
  touch "$stamp"
fi
"$VENV/bin/python" -m fakedriver.protogen >/dev/null
# Present already (built here, or from `dra-conformance bundle load`): no npm registry needed.
"$VENV/bin/python" -m conformance.report.allure_html check >/dev/null 2>&1 ||
  "$VENV/bin/python" -m conformance.report.allure_html install
say "ready"
