"""Write-up 000's grid end to end from the shell (`--parallel`, issue 16) on 1 core and on all
(where parallel=auto trains it, and on Ray), with the sweep's own utilisation and fixed cost, and
the speed-up they predict for 16 cores."""

import os
import subprocess
import sys
import tempfile
import time

from lab import results

# Every core busy: write-up 000's grid (one memory mode: 64 runs over 4 seeds), end to end.
PARALLEL_GRID = ["+sweeps=writeup_mc_vfa", "memory=clear", "seed=range(0,4)"]


def timed_python(args: list[str]) -> tuple[float, float, str]:
    """`python ARGS` from the shell: when it started (epoch seconds), its wall time, its output."""
    epoch, start = time.time(), time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"python {' '.join(args[:4])} failed:\n{done.stderr}")
    return epoch, seconds, done.stdout


def timed_sweep(args: list[str], prelude: str = "") -> tuple[float, float, str]:
    """`python -m lab.sweep --multirun ARGS` (`timed_python`), figures off; `prelude` is Python code
    its process runs first."""
    command = ["-c", f"{prelude}\nimport runpy\nrunpy.run_module('lab.sweep', run_name='__main__')"] \
        if prelude else ["-m", "lab.sweep"]
    return timed_python([*command, "--multirun", *args, "hydra.launcher.figures=false"])


def warm_up() -> None:
    """The parallel grid swept once at iterations=1, untimed: a fresh install's first sweep compiles
    the kernels."""
    with tempfile.TemporaryDirectory() as out:
        timed_sweep([*PARALLEL_GRID, "iterations=1", f"results_dir={out}"])


def cores_line(output: str) -> tuple[float, str]:
    """The sweep's own wall time and its `cores:` line, from a sweep's output."""
    line = output.rsplit("cores: ", 1)[1].splitlines()[0]
    return float(line.split(" busy over ", 1)[1].split(" s;", 1)[0]), line


def longest_first_makespan(seconds: list[float], cores: int) -> float:
    """When the last of these runs ends if each goes, longest first, to the first free core."""
    free = [0.0] * cores
    for length in sorted(seconds, reverse=True):
        free[free.index(min(free))] += length
    return max(free)


def ray_ready_seconds(cores: int) -> float:
    """Seconds from starting a local Ray until an actor has imported the lab (lab.execution.batch) and can
    train: the least a sweep on a Ray it starts takes, whatever its forks train meanwhile."""
    script = ("import time\nfrom lab import sweep\nfrom lab.execution import batch\nimport ray\n"
              "start = time.perf_counter()\n"
              f"sweep.connect(num_cpus={cores})\n"
              "ray.get(ray.remote(batch.Trainer).remote({}).train.remote([]))\n"
              "print(time.perf_counter() - start)\nsweep.disconnect()")
    return float(timed_python(["-c", script])[2].split()[-1])


def auto_mode(args: list[str], cores: int) -> str:
    """Where parallel=auto would train the grid on `cores` cores (lab.sweep.mode), from the
    sweep's dry run."""
    output = timed_sweep([*args, "hydra.launcher.dry_run=true", f"hydra.launcher.num_cpus={cores}"])[2]
    return ("processes" if "forks of this process" in output else
            "driver" if "training them in this process" in output else "ray")


def parallel_section(quick: bool) -> None:
    iterations = ["iterations=50"] if quick else []
    most = os.cpu_count() or 1
    print(f"parallel: python -m lab.sweep --multirun {' '.join(PARALLEL_GRID + iterations)}, end to end")
    warm_up()
    with tempfile.TemporaryDirectory() as out:
        _, seconds, output = timed_sweep([*PARALLEL_GRID, "iterations=1", f"results_dir={out}"])
        print(f"  the same grid at iterations=1: {seconds:.1f} s (target 5 s); {cores_line(output)[1]}")
    walls, run_walls, startups, outside = {}, {}, {}, {}
    on_ray = f"{most} cores, parallel=true"
    cases = {"1 core": (1, "auto"), f"{most} cores": (most, "auto"), on_ray: (most, "true")}
    for name, (cores, parallel) in cases.items():
        with tempfile.TemporaryDirectory() as out:
            epoch, walls[name], output = timed_sweep([
                *PARALLEL_GRID, *iterations, f"results_dir={out}", f"hydra.launcher.num_cpus={cores}",
                f"hydra.launcher.parallel={parallel}"])
            runs = results.runs(results.load(out))
        run_walls[name], startups[name] = list(runs["wall_seconds"]), list(runs["startup_seconds"])
        ended = runs["finished_utc"].map(lambda t: t.timestamp())
        # the command's time outside every run: before the first began, after the last ended
        outside[name] = (min(ended - runs["wall_seconds"]) - epoch) + (epoch + walls[name] - max(ended))
        where = {"driver": "in its own process", "processes": f"in {cores} forks", "ray": "on Ray"}[
            auto_mode([*PARALLEL_GRID, *iterations], cores) if parallel == "auto" else "ray"]
        print(f"  {name} ({where}): {walls[name]:.1f} s; {cores_line(output)[1]}")
    if most > 1:
        # the same runs took longer side by side (a VM's cores are slower together, or were busier):
        # that bounds the speed-up whatever the lab does
        slower = sum(run_walls[f"{most} cores"]) / sum(run_walls["1 core"])
        print(f"  speed-up at {most} cores: {walls['1 core'] / walls[f'{most} cores']:.2f}x (target 1.8x at 2 "
              f"cores, utilisation 85%); on Ray: {walls['1 core'] / walls[on_ray]:.2f}x; the runs took "
              f"{slower:.2f}x as long in {most} forks as alone, so at most {most / slower:.2f}x")
    # 16 cores, from the measured pieces. Amdahl: the time outside the runs plus the 1-core runs'
    # work (their times but start-up) spread over 16 cores, longest first (forks take the longest
    # first, as Ray does), plus the longest start-up of a run in forks (each worker loads its kernels
    # once, side by side with the others; forks warmed up ahead did so outside the runs). On a Ray
    # it starts, the sweep also cannot end before Ray is ready.
    work = [wall - startup for wall, startup in zip(run_walls["1 core"], startups["1 core"])]
    spread = longest_first_makespan(work, 16) + max(startups[f"{most} cores"])
    if auto_mode([*PARALLEL_GRID, *iterations], 16) == "ray":
        ready = ray_ready_seconds(most)
        predicted = outside[on_ray] + max(spread, ready)
        how = f"on Ray: {outside[on_ray]:.1f} s outside the runs plus the later of the runs " \
              f"spread longest first ({spread:.1f} s, a worker's start-up included) and Ray's start ({ready:.1f} s)"
    else:
        predicted = outside[f"{most} cores"] + spread
        how = f"in 16 forks: {outside[f'{most} cores']:.1f} s outside the runs plus the runs spread longest " \
              f"first ({spread:.1f} s, a worker's start-up included)"
    print(f"  predicted on 16 cores: {predicted:.1f} s, {walls['1 core'] / predicted:.1f}x the 1-core run "
          f"(goal 8x), {how}")
