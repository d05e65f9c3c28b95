#!/usr/bin/env python3
"""runc wrapper for hosts whose capability bounding set lacks CAP_SYS_RESOURCE.

Installed by `dra-conformance` host preparation only when that capability is missing.
Privileged containers ask for every capability; the kernel refuses to grant one outside the
bounding set, so the real runc fails with "unable to apply caps". We drop the missing
capabilities from the OCI config (bundle config.json for create/run, --process file for exec)
and then exec the real runc with unchanged arguments.
"""

import json
import os
import sys

REAL_RUNC = "@REAL_RUNC@"
MISSING_CAPS = set("@MISSING_CAPS@".split(","))


def _option_value(args: list[str], names: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _strip_caps(process: dict) -> None:
    caps = process.get("capabilities") or {}
    for key in ("bounding", "effective", "inheritable", "permitted", "ambient"):
        if key in caps and caps[key]:
            caps[key] = [c for c in caps[key] if c not in MISSING_CAPS]


def _rewrite(path: str, is_process_file: bool) -> None:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    _strip_caps(doc if is_process_file else doc.get("process") or {})
    tmp = path + ".dra-tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def main() -> None:
    args = sys.argv[1:]
    command = next((a for a in args if a in ("create", "run", "exec")), None)
    if command in ("create", "run"):
        bundle = _option_value(args, ("--bundle", "-b")) or os.getcwd()
        _rewrite(os.path.join(bundle, "config.json"), is_process_file=False)
    elif command == "exec":
        process = _option_value(args, ("--process", "-p"))
        if process:
            _rewrite(process, is_process_file=True)
    os.execv(REAL_RUNC, [REAL_RUNC, *args])


if __name__ == "__main__":
    main()
