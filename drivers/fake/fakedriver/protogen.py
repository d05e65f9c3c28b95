"""Generate the Python gRPC stubs of the kubelet plugin APIs into ``_gen/``.

Run ``python -m fakedriver.protogen`` on a host with grpcio-tools. The stubs are
build output (git-ignored) and get copied into the driver image, which has no
grpcio-tools. Regeneration is skipped when a stamp of the inputs matches.

The .proto files are staged as ``<package>/_gen/<name>.proto`` so that protoc
writes package-qualified imports (``from fakedriver._gen import x_pb2``) into
the ``*_pb2_grpc.py`` modules instead of top-level ``import x_pb2``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import shutil
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE_NAME = PACKAGE_DIR.name
PROTO_DIR = PACKAGE_DIR / "protos"
GEN_DIR = PACKAGE_DIR / "_gen"
STAMP_FILE = GEN_DIR / "STAMP"
# Bump when the generation layout changes, to force regeneration.
LAYOUT_VERSION = "1"


def proto_files() -> list[Path]:
    return sorted(PROTO_DIR.glob("*.proto"))


def _tools_version() -> str:
    try:
        return importlib.metadata.version("grpcio-tools")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def input_digest() -> str:
    digest = hashlib.sha256()
    digest.update(f"layout={LAYOUT_VERSION};tools={_tools_version()};".encode())
    for proto in proto_files():
        digest.update(proto.name.encode() + b"\0" + proto.read_bytes() + b"\0")
    return digest.hexdigest()


def is_up_to_date() -> bool:
    return STAMP_FILE.is_file() and STAMP_FILE.read_text().strip() == input_digest()


def _run_protoc(staging_root: Path, out_root: Path, protos: list[str]) -> None:
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as exc:  # pragma: no cover - depends on the host
        raise SystemExit(
            "grpcio-tools is not installed; run `pip install grpcio-tools` and retry"
        ) from exc
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{staging_root}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")


def generate(force: bool = False) -> bool:
    """Generate the stubs if needed; returns True when files were (re)written."""
    GEN_DIR.mkdir(exist_ok=True)
    # A lock, because pytest-xdist workers may all call this at once.
    with open(GEN_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and is_up_to_date():
            return False
        with tempfile.TemporaryDirectory(prefix="fakedriver-protogen-") as tmp:
            staging = Path(tmp) / "in"
            out = Path(tmp) / "out"
            staged_dir = staging / PACKAGE_NAME / "_gen"
            staged_dir.mkdir(parents=True)
            (out / PACKAGE_NAME / "_gen").mkdir(parents=True)
            names = []
            for proto in proto_files():
                shutil.copy2(proto, staged_dir / proto.name)
                names.append(f"{PACKAGE_NAME}/_gen/{proto.name}")
            _run_protoc(staging, out, names)
            for old in GEN_DIR.glob("*_pb2*.py"):
                old.unlink()
            for new in (out / PACKAGE_NAME / "_gen").glob("*.py"):
                shutil.copy2(new, GEN_DIR / new.name)
        (GEN_DIR / "__init__.py").write_text('"""Generated gRPC stubs (do not edit)."""\n')
        STAMP_FILE.write_text(input_digest() + "\n")
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fakedriver.protogen", description=__doc__)
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the stubs are missing or stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        ok = is_up_to_date()
        print("up to date" if ok else "stale or missing: run python -m fakedriver.protogen")
        return 0 if ok else 1
    changed = generate(force=args.force)
    print(f"{'generated' if changed else 'up to date'}: {GEN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
