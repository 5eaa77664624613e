"""lab.files.write_atomic: whole files or none, with ordinary permissions."""

import os
import stat

import pytest

from lab.files import write_atomic


def test_a_write_replaces_the_file_whole_with_ordinary_permissions(tmp_path):
    path = tmp_path / "deep" / "a.bin"
    write_atomic(path, b"old")
    write_atomic(path, lambda f: f.write(b"new"), durable=True)
    assert path.read_bytes() == b"new"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not mkstemp's private 0600
    assert os.listdir(path.parent) == ["a.bin"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "a.bin"
    write_atomic(path, b"old")

    def half(f):
        f.write(b"ne")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, half)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["a.bin"]
