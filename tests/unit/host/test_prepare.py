import json
import subprocess
import sys

from conformance.host import prepare

FULL = "CapBnd:\t000001ffffffffff\n"
NO_SYS_RESOURCE = "Name:\tx\nCapBnd:\t000001fffeffffff\n"


def test_missing_capabilities_from_status():
    assert prepare.missing_capabilities(FULL) == []
    assert prepare.missing_capabilities(NO_SYS_RESOURCE) == ["CAP_SYS_RESOURCE"]


def test_daemon_config_keeps_existing_settings():
    merged = prepare.merged_daemon_config(
        {"log-level": "warn", "runtimes": {"other": {"path": "/x"}}}, prepare.WRAPPER_PATH
    )
    assert merged["log-level"] == "warn"
    assert merged["runtimes"]["other"] == {"path": "/x"}
    assert merged["default-runtime"] == prepare.WRAPPER_RUNTIME
    assert merged["runtimes"][prepare.WRAPPER_RUNTIME] == {"path": str(prepare.WRAPPER_PATH)}


def _fake_runc(tmp_path):
    """A stand-in for runc that records its arguments, so the wrapper's exec is observable."""
    fake = tmp_path / "runc"
    fake.write_text(
        f"#!{sys.executable}\nimport sys, json\n"
        f"open({str(tmp_path / 'args.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    return fake


def _wrapper(tmp_path, missing=("CAP_SYS_RESOURCE",)):
    script = tmp_path / "wrapper"
    script.write_text(prepare.render_wrapper(str(_fake_runc(tmp_path)), list(missing)))
    script.chmod(0o755)
    return script


CAPS = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]


def test_wrapper_strips_capability_from_bundle_and_execs_runc(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    spec = {
        "process": {"capabilities": {k: list(CAPS) for k in ("bounding", "effective", "permitted")}}
    }
    (bundle / "config.json").write_text(json.dumps(spec))
    args = ["--root", "/run/x", "create", "--bundle", str(bundle), "cid"]
    subprocess.run([str(_wrapper(tmp_path)), *args], check=True)
    caps = json.loads((bundle / "config.json").read_text())["process"]["capabilities"]
    assert caps["bounding"] == ["CAP_CHOWN", "CAP_SYS_ADMIN"]
    assert caps["permitted"] == ["CAP_CHOWN", "CAP_SYS_ADMIN"]
    assert json.loads((tmp_path / "args.json").read_text()) == args


def test_wrapper_strips_capability_from_exec_process_file(tmp_path):
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"capabilities": {"effective": list(CAPS)}}))
    subprocess.run([str(_wrapper(tmp_path)), "exec", "--process", str(process), "cid"], check=True)
    assert json.loads(process.read_text())["capabilities"]["effective"] == [
        "CAP_CHOWN",
        "CAP_SYS_ADMIN",
    ]


def test_a_wrapper_for_two_missing_capabilities_strips_both(tmp_path):
    """The template's list of capabilities is one comma-separated placeholder: a rewrite of it
    (a linter's "fix") that keeps only one would pass the single-capability tests above."""
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"capabilities": {"effective": list(CAPS)}}))
    wrapper = _wrapper(tmp_path, ("CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"))
    subprocess.run([str(wrapper), "exec", "--process", str(process), "cid"], check=True)
    assert json.loads(process.read_text())["capabilities"]["effective"] == ["CAP_CHOWN"]


def test_wrapper_passes_other_commands_through(tmp_path):
    subprocess.run([str(_wrapper(tmp_path)), "state", "cid"], check=True)
    assert json.loads((tmp_path / "args.json").read_text()) == ["state", "cid"]


def test_inotify_limits_are_raised_only_where_lower(tmp_path, monkeypatch) -> None:
    from conformance.host import prepare
    from conformance.progress import Progress

    monkeypatch.setattr(prepare, "_is_root", lambda: True)
    (tmp_path / "fs/inotify").mkdir(parents=True)
    (tmp_path / "fs/inotify/max_user_instances").write_text("128\n")
    (tmp_path / "fs/inotify/max_user_watches").write_text("1048576\n")
    changed = prepare.raise_inotify_limits(Progress(), proc_sys=tmp_path)
    assert changed == ["fs.inotify.max_user_instances 128 -> 512"]
    assert (tmp_path / "fs/inotify/max_user_instances").read_text() == "512\n"
    assert (tmp_path / "fs/inotify/max_user_watches").read_text() == "1048576\n"
    assert prepare.raise_inotify_limits(Progress(), proc_sys=tmp_path) == []


def test_a_running_dockerd_that_is_slow_is_waited_for_never_started_again() -> None:
    # (answers, dockerd pid, dockerd installed) -> what to do
    assert prepare.docker_action(True, None, True) == "use"
    assert prepare.docker_action(False, 4242, True) == "wait"  # slow `docker info`: no second
    assert prepare.docker_action(False, 4242, False) == "wait"
    assert prepare.docker_action(False, None, True) == "start"
    assert prepare.docker_action(False, None, False) == "install"


def _proc(tmp_path, processes):
    proc = tmp_path / "proc"
    for pid, comm in processes.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
    (proc / "self").mkdir()
    return proc


def test_the_dockerd_pid_comes_from_its_pid_file_or_the_process_table(tmp_path) -> None:
    proc = _proc(tmp_path, {12: "containerd", 345: "dockerd", 900: "dockerd"})
    pid_file = tmp_path / "docker.pid"
    pid_file.write_text("900")
    assert prepare.dockerd_pid(pid_file, proc) == 900
    pid_file.write_text("12")  # a stale file: that pid is another process now
    assert prepare.dockerd_pid(pid_file, proc) == 345
    assert prepare.dockerd_pid(tmp_path / "none.pid", proc) == 345
    assert prepare.dockerd_pid(pid_file, _proc(tmp_path / "b", {12: "containerd"})) is None


def test_this_hosts_dockerd_is_found() -> None:
    """The engine the e2e tests use runs here; the check must see it whatever its answer time."""
    import shutil

    import pytest

    if not prepare.docker_running(timeout_s=60):
        pytest.skip("no Docker engine on this machine")
    pid = prepare.dockerd_pid()
    assert pid is not None or shutil.which("dockerd") is None  # a remote engine (DOCKER_HOST)
