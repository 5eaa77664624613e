"""lab.files: whole files or none, with ordinary permissions (write_atomic); checkpoints' arrays
stored and read back bit for bit, the mostly-zero ones in their sparse form (npz_bytes)."""

import io
import os
import stat
import zipfile

import numpy as np

import pytest

from lab.files import npz_arrays, npz_bytes, write_atomic


def test_a_write_replaces_the_file_whole_with_ordinary_permissions(tmp_path):
    path = tmp_path / "deep" / "a.bin"
    write_atomic(path, b"old")
    write_atomic(path, lambda f: f.write(b"new"))
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


def test_checkpoint_arrays_read_back_bit_for_bit_and_mostly_zero_ones_are_stored_sparse():
    q = np.zeros((19683, 9))  # a short run's Q table
    q[5, 3], q[100, 2], q[7, 7] = -0.0, 0.25, np.nan  # -0.0 is set bits: it must stay -0.0
    dense = np.random.default_rng(0).random((40, 30)).astype(np.float32)
    arrays = {"algorithm": np.array("q_table"), "q": q, "dense": dense, "small": np.zeros(5, np.int16),
              "flags": np.zeros(5000, bool), "columns": np.asfortranarray(np.where(dense > 0.99, dense, 0))}
    data = npz_bytes(**arrays)
    members = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert {"q@shape.npy", "q@index.npy", "q@values.npy", "dense.npy", "small.npy", "flags@shape.npy"} <= members
    read = npz_arrays(data)
    assert sorted(read) == sorted(arrays)
    for name, array in arrays.items():
        assert (read[name].dtype, read[name].shape, read[name].tobytes()) == (array.dtype, array.shape, array.tobytes()), name
    assert len(npz_bytes(q=q)) < 1_000  # deflated whole, the 1.4 MB table took 6.6 kB
