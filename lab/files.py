"""Writing a file whole: a reader sees the old file, or none, or the whole new one, never a part."""

import contextlib
import ctypes
import functools
import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np


def write_atomic(path: Path, data: bytes | Callable[[BinaryIO], None]) -> None:
    """Write `data` (bytes, or a function that writes to the open file) whole, unflushed (`write_group`)."""
    write_group([(path, data)], durable=False)


def _sync(fds: list[int], folders: set[Path]) -> None:
    """Flush to the disk what was written into these open files (else, with no files, the
    folders' entries): one syncfs per filesystem where Linux has it (a group commit: one flush
    for many files), else an fsync per file or folder."""
    syncfs = getattr(_libc(), "syncfs", None)
    if syncfs is None:
        for fd in fds:
            os.fsync(fd)
        for folder in folders if not fds else ():
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return
    devices = set()
    for folder in folders:
        fd = os.open(folder, os.O_RDONLY)
        try:
            device = os.fstat(fd).st_dev
            if device not in devices and syncfs(fd) != 0:
                raise OSError(ctypes.get_errno(), f"syncfs failed on {folder}")
            devices.add(device)
        finally:
            os.close(fd)


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # not a POSIX C library: fsync per file
        return None


def write_group(files: list[tuple[Path, bytes | Callable[[BinaryIO], None]]], durable: bool = True) -> None:
    """Write many files whole and durably at once (results: a group commit). Each goes to a hidden
    temporary file first; then one flush to the disk for them all; then the renames, in the
    order given, and another flush so that the renames last too. A reader sees, for each
    path, the old file or none or the whole new one; a crash before the renames leaves only
    hidden temporary files. Not `durable`: the same without the flushes (`write_atomic`)."""
    umask = os.umask(0)  # read by setting it: put back at once
    os.umask(umask)
    mode, written = 0o666 & ~umask, []
    try:
        for path, data in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            written.append((fd, tmp, path))
            with open(fd, "wb", closefd=False) as f:
                data(f) if callable(data) else f.write(data)
            os.fchmod(fd, mode)  # mkstemp makes files private; these are ordinary files
        folders = {path.parent for _, _, path in written}
        if durable:
            _sync([fd for fd, _, _ in written], folders)
        for fd, tmp, path in written:
            os.close(fd)
            os.replace(tmp, path)
        written = []
        if durable:
            _sync([], folders)
    except BaseException:
        for fd, tmp, _ in written:
            with contextlib.suppress(OSError):
                os.close(fd)
            Path(tmp).unlink(missing_ok=True)
        raise


SPARSE = ("@shape", "@index", "@values")  # suffixes of the members that hold a mostly-zero array


def npz_bytes(**arrays) -> bytes:
    """Arrays as the bytes of an .npz archive, deflated at zlib's fastest level; an array mostly of
    zeros (a short run's Q table) as its shape, the flat indices of its nonzero elements and their
    values, bit for bit (-0.0 stays -0.0): deflating its zeros cost more than training the run."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, array in arrays.items():
            for member, part in _members(name, np.asanyarray(array)):
                with archive.open(f"{member}.npy", "w", force_zip64=True) as file:
                    np.lib.format.write_array(file, part, allow_pickle=False)
    return buffer.getvalue()


def _members(name: str, array: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The archive's members for one array: itself, or its sparse form where that is smaller."""
    if array.dtype.kind not in "biuf" or array.dtype.itemsize not in (1, 2, 4, 8) or array.size < 1024:
        return [(name, array)]
    flat = np.ascontiguousarray(array).reshape(-1)
    index = np.flatnonzero(flat.view(f"u{array.dtype.itemsize}") != 0)  # the bits: -0.0 counts; bools: 7x faster
    if index.size * (array.dtype.itemsize + 8) >= array.nbytes // 2:
        return [(name, array)]
    shape, at, values = (name + suffix for suffix in SPARSE)
    return [(shape, np.array(array.shape, np.int64)), (at, index), (values, flat[index])]


def npz_arrays(source) -> dict[str, np.ndarray]:
    """The arrays `npz_bytes` wrote (from its bytes, or an open .npz file), by name."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    with np.load(source, allow_pickle=False) as archive:
        members = dict(archive)
    arrays = {}
    for name, value in members.items():
        if name.endswith(SPARSE[0]):
            name = name.removesuffix(SPARSE[0])
            index, values = members[name + SPARSE[1]], members[name + SPARSE[2]]
            array = np.zeros(int(np.prod(value)), values.dtype)
            array[index] = values
            arrays[name] = array.reshape(tuple(value))
        elif not name.endswith(SPARSE[1:]):
            arrays[name] = value
    return arrays
