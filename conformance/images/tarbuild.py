"""Build tar archives in memory or on disk to copy files into containers (put_archive)."""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path


class TarBuilder:
    """Collects files with explicit modes; every parent directory is added 0755."""

    def __init__(self, fileobj: io.BufferedIOBase | None = None) -> None:
        self._buffer = fileobj or io.BytesIO()
        self._tar = tarfile.open(fileobj=self._buffer, mode="w")  # noqa: SIM115 - closed by close()
        self._dirs: set[str] = set()

    def _ensure_dirs(self, path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self._dirs:
                self._dirs.add(d)
                info = tarfile.TarInfo(d)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                self._tar.addfile(info)

    def add_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._ensure_dirs(path)
        info = tarfile.TarInfo(path.strip("/"))
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        self._tar.addfile(info, io.BytesIO(data))

    def add_symlink(self, path: str, target: str) -> None:
        self._ensure_dirs(path)
        info = tarfile.TarInfo(path.strip("/"))
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
        self._tar.addfile(info)

    def add_dir(self, path: str, mode: int = 0o755) -> None:
        self._ensure_dirs(path)
        if path.strip("/") in self._dirs:
            return
        self._dirs.add(path.strip("/"))
        info = tarfile.TarInfo(path.strip("/"))
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, int(time.time())
        self._tar.addfile(info)

    def add_file(self, path: str, source: Path, mode: int | None = None) -> None:
        self._ensure_dirs(path)
        info = self._tar.gettarinfo(str(source), arcname=path.strip("/"))
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        if mode is not None:
            info.mode = mode
        with open(source, "rb") as f:
            self._tar.addfile(info, f)

    def add_tree(self, dest: str, source: Path) -> None:
        """Copy a directory tree; scripts keep their exec bit, other files become 0644."""
        for path in sorted(source.rglob("*")):
            rel = f"{dest.rstrip('/')}/{path.relative_to(source)}"
            if path.is_file():
                self.add_file(rel, path, 0o755 if path.stat().st_mode & 0o111 else 0o644)

    def close(self) -> io.BufferedIOBase:
        self._tar.close()
        self._buffer.seek(0)
        return self._buffer
