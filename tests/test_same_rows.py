"""Same configuration and seed, same rows: in any process, with any thread setting, on any machine.

A short fixed run of every algorithm has a fingerprint (lab.results.fingerprint: its rows without
the timing and provenance columns, floats rounded to 12 decimals, and its checkpoint's arrays
exactly) stored in tests/golden_runs.json. Every way a run can be trained must give it: this
process (pytest imports numpy before the lab), processes with BLAS threads set either way and
either import order, a sweep's forks, a Ray worker, and a process that computes as an older CPU
would (numpy's SIMD code and glibc's FMA variants off, numba compiling for a generic x86-64),
and a process on another CPU model, an Intel Westmere emulated by QEMU: so drift between CPUs
shows on any one machine. After a deliberate change of the numerics,
`python tests/test_same_rows.py --write` records the new fingerprints (say why in the commit).
"""

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lab import results
from lab.config.compose import compose
from lab.config.jobs import job
from lab.run import run

GOLDEN = Path(__file__).with_name("golden_runs.json")
RUNS = {
    "mc_vfa": ["iterations=200", "episodes_per_update=10", "eval_every=50"],
    "q_net": ["opponent=random", "player=1", "iterations=40", "episodes_per_update=100", "eval_every=10",
              "gamma=0.858", "loss_reward=-1"],
    "alphazero": ["iterations=3", "episodes_per_update=20", "eval_every=1"],
    "q_table": ["iterations=20", "episodes_per_update=100", "eval_every=5", "alpha=0.28", "epsilon_decay_per_game=0.99985"],
    "td_value": ["iterations=20", "episodes_per_update=100", "eval_every=5"],
    "negamax_q": ["iterations=20", "episodes_per_update=100", "eval_every=5", "ensemble=2"],
}
"""Per algorithm, a run of about a second; the knobs not given are the shipped defaults, and a
changed default is given here at its old value, so that the fingerprints measure the numerics"""


def _job(name: str, results_dir="results/golden"):
    return job(compose(f"algorithm={name}", *RUNS[name], f"results_dir={results_dir}"))


def fingerprints(names=tuple(RUNS)) -> dict[str, str]:
    """The golden runs of the algorithms `names` trained in this process."""
    out = {}
    for name in names:
        result = run(_job(name))
        assert not result.failed, result.rows["error"].iloc[0]
        out[name] = results.fingerprint(result.rows, result.checkpoint)
    return out


def _stored(results_dir) -> dict[str, str]:
    """The fingerprints of the golden runs a sweep stored in results_dir, by algorithm."""
    table = results.load(results_dir)
    out = {}
    for run_id, rows in table.groupby("run_id"):
        checkpoint = results.checkpoint(results_dir, run_id).read_bytes()
        out[rows["algorithm"].iloc[0]] = results.fingerprint(rows, checkpoint)
    return out


def _in_a_process(env: dict, numpy_first: bool, emulator: tuple = (), names=tuple(RUNS)) -> dict[str, str]:
    """fingerprints(names) in a new Python process with `env` added to this one's (run by `emulator`)."""
    code = ("import numpy\n" if numpy_first else "") + (
        f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"import test_same_rows; print(json.dumps(test_same_rows.fingerprints({tuple(names)!r})))")
    done = subprocess.run([*emulator, sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def golden() -> dict[str, str]:
    return json.loads(GOLDEN.read_text())


def test_every_algorithm_gives_its_golden_run_in_this_process(golden):
    assert set(golden) == set(RUNS)
    assert fingerprints() == golden


@pytest.mark.integration
@pytest.mark.parametrize("threads, numpy_first", [("2", True), ("1", False), ("8", False)])
def test_blas_threads_and_import_order_change_nothing(golden, threads, numpy_first):
    env = {"OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    assert _in_a_process(env, numpy_first) == golden


@pytest.mark.integration
@pytest.mark.parametrize("parallel", ["processes", True])
def test_forks_and_ray_workers_give_the_golden_runs(golden, tmp_path, parallel):
    from lab import sweep

    jobs = [_job(name, tmp_path) for name in RUNS]
    execution = sweep.execute(jobs, num_cpus=2, parallel=parallel)
    assert len(execution.done) == len(RUNS) and not any(o.failed for o in execution.done)
    assert _stored(tmp_path) == golden


def _features_to_disable() -> str:
    """numpy's dispatched SIMD targets that this CPU has (so that numpy runs its baseline code)."""
    from numpy._core import _multiarray_umath as umath

    return " ".join(t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t))


@pytest.mark.slow
@pytest.mark.integration
def test_an_emulated_older_cpu_gives_the_golden_runs(golden, tmp_path):
    """numpy without its SIMD targets, OpenBLAS with an old kernel and two threads, glibc without
    its AVX2/FMA variants, numba compiling for a generic x86-64 (its own kernel cache)."""
    env = {"NPY_DISABLE_CPU_FEATURES": _features_to_disable(), "OPENBLAS_CORETYPE": "Prescott",
           "OPENBLAS_NUM_THREADS": "2", "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX",
           "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    assert _in_a_process(env, numpy_first=True) == golden


QEMU = shutil.which("qemu-x86_64")
OTHER_CPU = "Westmere"
"""QEMU's model of an Intel Westmere: SSE4.2 without AVX, where this machine is an AMD EPYC with AVX2"""


@pytest.mark.slow
@pytest.mark.integration
def test_another_cpu_model_gives_the_golden_runs(golden, tmp_path):
    """The golden runs of the net learners on another CPU model, emulated instruction by
    instruction by QEMU's user mode: numba's LLVM compiles for that CPU, numpy and OpenBLAS pick
    their kernels for it. The nets' sums, tanh and softmax are where CPUs could differ; the
    tabular learners' updates are single IEEE operations (and all six run as an older CPU
    computes them above). LLVM compiles for the emulated CPU's name and features natively, into
    the kernel cache the emulated processes then load (the same machine code: compiled under
    emulation it cost about five minutes of a core); the emulated runs take about 70 s."""
    if QEMU is None:
        pytest.fail("this test needs QEMU's user-mode emulator: apt-get install qemu-user (.ci/run installs it)")
    emulator = (QEMU, "-cpu", OTHER_CPU)
    seen = subprocess.run([*emulator, sys.executable, "-c", "from numba.core.registry import cpu_target; "
                           "print(*cpu_target.target_context.codegen().magic_tuple()[1:])"],
                          capture_output=True, text=True, timeout=300)
    cpu, features = seen.stdout.split()
    assert cpu == OTHER_CPU.lower(), seen.stderr  # numba sees the emulated CPU
    nets, cache = ("mc_vfa", "q_net", "alphazero"), {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    compiled_here = _in_a_process({**cache, "NUMBA_CPU_NAME": cpu, "NUMBA_CPU_FEATURES": features},
                                  numpy_first=True, names=nets)
    # alphazero's run takes as long emulated as the other two's together: two processes, one per core
    groups = (("mc_vfa", "q_net"), ("alphazero",))
    with ThreadPoolExecutor(len(groups)) as pool:
        found = pool.map(lambda names: _in_a_process(cache, numpy_first=True, emulator=emulator, names=names), groups)
        found = {k: v for part in found for k, v in part.items()}
    assert found == compiled_here == {k: golden[k] for k in nets}


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(json.dumps(fingerprints(), indent=1) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        print(json.dumps(fingerprints(), indent=1))
