"""numba's private API, in one place: the state of the random stream compiled kernels draw from.

numba has no public accessor for where that stream stands (lab.game.seed_kernels seeds it); its C
helper module `numba._helperlib`, which numba itself seeds it through, is where the lab reads and
restores it: to save a learner's training state (lab.agents.base) and to train several runs in turn
in one process, each on its own stream (lab.search.trial). tests/test_compat_numba.py fails with a
clear message when numba moves it or a numba outside CHECKED is installed.
"""

CHECKED = ("0.68",)  # numba releases (major.minor) checked (tests/test_compat_numba.py)


def kernel_stream() -> tuple:
    """Where the compiled kernels' random stream stands: (index, keys), the Mersenne Twister's
    position and its 624 keys, to go on from later with `set_kernel_stream`."""
    from numba import _helperlib  # when called: a numba that moved it breaks this, not the lab's import

    return _helperlib.rnd_get_state(_helperlib.rnd_get_np_state_ptr())


def set_kernel_stream(state) -> None:
    """Put the compiled kernels' random stream back where `kernel_stream` found it."""
    from numba import _helperlib  # when called: a numba that moved it breaks this, not the lab's import

    _helperlib.rnd_set_state(_helperlib.rnd_get_np_state_ptr(), state)

