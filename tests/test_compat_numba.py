"""numba's private API (lab/compat/numba.py): the compiled kernels' random stream read and put
back through numba._helperlib. These fail with a clear message when numba moves it."""

import numba
import numpy as np
from numba import njit

from lab import game
from lab.compat import numba as compat


@njit(cache=True)
def _draws(n):
    return np.random.random(n)


def test_the_installed_numba_is_one_the_lab_was_checked_against():
    release = ".".join(numba.__version__.split(".")[:2])
    assert release in compat.CHECKED, (
        f"numba {numba.__version__} is not among the releases lab/compat/numba.py was checked "
        f"against ({', '.join(compat.CHECKED)}): run tests/test_compat_numba.py and "
        f"tests/test_same_rows.py with it and add {release} to CHECKED if they pass")


def test_the_kernel_stream_goes_on_where_it_was_saved():
    try:
        game.seed_kernels(7)
        _draws(5)
        saved = compat.kernel_stream()
        expected = _draws(5)
        _draws(3)  # the stream moves on ...
        compat.set_kernel_stream(saved)  # ... and is put back
    except (ImportError, AttributeError) as moved:
        raise AssertionError(f"numba {numba.__version__} moved its private random-stream API "
                             f"(numba._helperlib.rnd_get_state / rnd_set_state / "
                             f"rnd_get_np_state_ptr) that lab/compat/numba.py uses: {moved}") from moved
    np.testing.assert_array_equal(_draws(5), expected)
    index, keys = saved
    assert isinstance(index, int) and len(keys) == 624  # the Mersenne Twister's state
