"""Host preparation: a running Docker engine, and the runc workaround for missing capabilities.

Only acts when needed: on an ordinary machine with a running engine this does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import tenacity

from conformance.cache import build_lock
from conformance.errors import HostError
from conformance.progress import Progress

# Capabilities a privileged container asks for (all of them up to CAP_CHECKPOINT_RESTORE).
CAPABILITY_NAMES = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
]

WRAPPER_PATH = Path("/usr/local/sbin/dra-conformance-runc")
DAEMON_JSON = Path("/etc/docker/daemon.json")
WRAPPER_RUNTIME = "dra-conformance-runc"


def missing_capabilities(status_text: str | None = None) -> list[str]:
    """Capabilities absent from this process's bounding set (from /proc/self/status)."""
    if status_text is None:
        status_text = Path("/proc/self/status").read_text()
    for line in status_text.splitlines():
        if line.startswith("CapBnd:"):
            mask = int(line.split()[1], 16)
            return [name for bit, name in enumerate(CAPABILITY_NAMES) if not mask >> bit & 1]
    return []


def docker_running(timeout_s: float = 10) -> bool:
    """Does a Docker engine answer? Asked through the Docker SDK (no docker CLI needed)."""
    import docker
    import requests
    from docker.errors import DockerException

    try:
        docker.from_env(timeout=timeout_s).ping()
    except (DockerException, requests.RequestException):
        return False
    return True


DOCKER_PID_FILE = Path("/var/run/docker.pid")
# A dockerd that runs but is slow to answer (a loaded host) gets this long, never a second one.
SLOW_DOCKERD_WAIT_S = 180.0


def dockerd_pid(pid_file: Path = DOCKER_PID_FILE, proc: Path = Path("/proc")) -> int | None:
    """The running dockerd's pid: its pid file's when that process is a dockerd, else the
    first process named dockerd (one started by hand may write no pid file)."""

    def is_dockerd(pid: str) -> bool:
        try:
            return (proc / pid / "comm").read_text().strip() == "dockerd"
        except OSError:
            return False

    try:
        recorded = pid_file.read_text().strip()
    except OSError:
        recorded = ""
    if recorded.isdigit() and is_dockerd(recorded):
        return int(recorded)
    found = sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit() and is_dockerd(p.name))
    return found[0] if found else None


def docker_action(answers: bool, daemon_pid: int | None, installed: bool) -> str:
    """What to do about the engine: `use` it, `wait` for a running one that did not answer
    yet, `install` one, or `start` the installed one. A dockerd that runs is never started
    again beside itself."""
    if answers:
        return "use"
    if daemon_pid is not None:
        return "wait"
    return "start" if installed else "install"


def wait_for_slow_dockerd(
    pid: int, progress: Progress, seconds: float = SLOW_DOCKERD_WAIT_S
) -> None:
    """A running dockerd that did not answer in 10 s: wait for it (saying so), never start a
    second one; HostError when it still does not answer."""
    progress.note(
        f"dockerd (pid {pid}) runs but did not answer in 10 s (a loaded host?): waiting up to "
        f"{seconds:.0f} s for it"
    )
    if _poll(lambda: docker_running(timeout_s=30), seconds=seconds):
        return
    raise HostError(
        f"dockerd (pid {pid}) runs but has not answered for {seconds:.0f} s",
        "check it (journalctl -u docker, or its log) and restart it yourself; a second "
        "dockerd beside it would fight it for the same state",
    )


def render_wrapper(real_runc: str, missing: list[str]) -> str:
    template = resources.files("conformance.host.assets").joinpath("runc_wrapper.py")
    text = template.read_text()
    return text.replace("@REAL_RUNC@", real_runc).replace("@MISSING_CAPS@", ",".join(missing))


def merged_daemon_config(current: dict, wrapper: Path) -> dict:
    config = dict(current)
    runtimes = dict(config.get("runtimes", {}))
    runtimes[WRAPPER_RUNTIME] = {"path": str(wrapper)}
    config["runtimes"] = runtimes
    config["default-runtime"] = WRAPPER_RUNTIME
    return config


def _is_root() -> bool:
    return os.geteuid() == 0


def _debian_like() -> bool:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return False
    return any(word in text for word in ("ID=debian", "ID=ubuntu", "ID_LIKE=debian"))


def install_docker_engine(progress: Progress) -> None:
    if not (_is_root() and _debian_like()):
        raise HostError(
            "no Docker engine is running and this is not a Debian/Ubuntu machine where we are root",
            "start a Docker engine (dockerd) yourself, then run the command again",
        )
    with progress.stage("install Docker engine (apt-get install docker.io)"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "docker.io"]):
            result = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise HostError(
                    f"{' '.join(cmd)} failed:\n{result.stderr[-2000:]}",
                    "install a Docker engine by hand and run the command again",
                )


def _configure_runc_wrapper(missing: list[str], progress: Progress) -> bool:
    """Install the wrapper and make it docker's default runtime. Returns True if changed."""
    real_runc = shutil.which("runc", path="/usr/sbin:/usr/bin:/usr/local/bin")
    if real_runc is None:
        raise HostError("runc not found", "apt-get install runc")
    wanted_wrapper = render_wrapper(real_runc, missing)
    current = json.loads(DAEMON_JSON.read_text()) if DAEMON_JSON.exists() else {}
    wanted_config = merged_daemon_config(current, WRAPPER_PATH)
    changed = False
    if not WRAPPER_PATH.exists() or WRAPPER_PATH.read_text() != wanted_wrapper:
        WRAPPER_PATH.parent.mkdir(parents=True, exist_ok=True)
        WRAPPER_PATH.write_text(wanted_wrapper)
        WRAPPER_PATH.chmod(0o755)
        changed = True
    if current != wanted_config:
        DAEMON_JSON.parent.mkdir(parents=True, exist_ok=True)
        DAEMON_JSON.write_text(json.dumps(wanted_config, indent=2) + "\n")
        changed = True
    if changed:
        progress.note(
            f"capabilities missing from the bounding set: {', '.join(missing)}; "
            f"docker's default runtime is now {WRAPPER_PATH}"
        )
    return changed


def _start_dockerd(progress: Progress, log_path: Path) -> None:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise HostError("dockerd not found after installing docker.io", "install docker.io")
    if shutil.which("systemctl") and Path("/run/systemd/system").exists():
        subprocess.run(["systemctl", "restart", "docker"], check=False)
    else:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the daemon for its lifetime
        subprocess.Popen([dockerd], stdout=log, stderr=log, start_new_session=True)
    if _poll(docker_running, seconds=60):
        return
    tail = log_path.read_text()[-2000:] if log_path.exists() else ""
    raise HostError(
        f"dockerd did not come up within 60 s; last log lines:\n{tail}", f"see {log_path}"
    )


def _stop_dockerd() -> None:
    subprocess.run(["pkill", "-x", "dockerd"], check=False)
    _poll(
        lambda: subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode != 0,
        seconds=30,
    )


def _poll(done: Callable[[], bool], *, seconds: float) -> bool:
    """Whether `done()` became true within `seconds`, asked once a second."""
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(seconds),
        wait=tenacity.wait_fixed(1),
        retry=tenacity.retry_if_result(lambda ok: not ok),
        retry_error_callback=lambda _: False,
    )
    return retrying(done)


# Every kind node runs a kubelet and containerd that each take inotify instances; with the
# kernel's default of 128 per user the third cluster on a machine fails to start (kubelet:
# "inotify_init: too many open files"). These are the values kind's own docs suggest, or more.
INOTIFY_MINIMUMS = {
    "fs/inotify/max_user_instances": 512,
    "fs/inotify/max_user_watches": 524288,
}


def raise_inotify_limits(progress: Progress, proc_sys: Path = Path("/proc/sys")) -> list[str]:
    """Raise the inotify limits to INOTIFY_MINIMUMS where lower; returns what it changed."""
    changed = []
    for key, minimum in INOTIFY_MINIMUMS.items():
        path = proc_sys / key
        try:
            current = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if current >= minimum:
            continue
        name = key.replace("/", ".")
        if not _is_root():
            progress.note(
                f"{name} is {current}: several kind clusters need {minimum} "
                f"(as root: sysctl -w {name}={minimum})"
            )
            continue
        path.write_text(f"{minimum}\n")
        changed.append(f"{name} {current} -> {minimum}")
    if changed:
        progress.note("raised inotify limits for kind nodes: " + ", ".join(changed))
    return changed


def prepare_host(progress: Progress, log_dir: Path) -> None:
    """Make sure a Docker engine runs and can start privileged containers, and that the
    kernel lets several kind nodes run side by side."""
    raise_inotify_limits(progress)
    missing = missing_capabilities()
    running = docker_running()
    daemon = None if running else dockerd_pid()
    action = docker_action(running, daemon, bool(shutil.which("dockerd")))
    if action == "wait" and daemon is not None:
        wait_for_slow_dockerd(daemon, progress)
        running = True
    elif action == "install":
        install_docker_engine(progress)
    changed = False
    if missing:
        if not _is_root():
            raise HostError(
                f"capabilities {missing} are missing and privileged containers need a runc "
                "wrapper, which needs root",
                "run as root",
            )
        changed = _configure_runc_wrapper(missing, progress)
    if running and not changed:
        return
    # Two set-ups of one process (the cluster and a background build) or of two processes
    # may get here at once: one starts the engine, the other finds it started.
    with build_lock("dockerd", "the Docker engine", progress.note, "being started"):
        if not changed and docker_running():
            return
        if not changed and (pid := dockerd_pid()) is not None:
            wait_for_slow_dockerd(pid, progress)
            return
        with progress.stage("start Docker engine"):
            if running:
                _stop_dockerd()
            _start_dockerd(progress, log_dir / "dockerd.log")
