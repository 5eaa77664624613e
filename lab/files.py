"""Writing a file whole: a reader sees the old file, or none, or the whole new one, never a part."""

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: Path, data: bytes | Callable[[BinaryIO], None], *, durable: bool = False) -> None:
    """Write `data` (bytes, or a function that writes to the open file) into a hidden temporary
    file in path's folder, then rename it over `path`. `durable`: flushed to the disk first
    (results; not files that live for one sweep, where it would only cost time)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            data(f) if callable(data) else f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())  # mkstemp makes files private; these are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
