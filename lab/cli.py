"""The one rule every command follows when it cannot do what was asked: one line on stderr that
names what was wrong and what is allowed, and an exit status that tells whose fault it was:
MISTAKE (2) the command line or its inputs (nothing is written), FAULT (1) the machine (a folder
it cannot write, a full disk). It imports nothing of the lab, so any module may use it.
"""

import argparse
import contextlib
import difflib
import errno
import functools
import os
import select
import signal
import sys
import time
import tempfile
from pathlib import Path
from typing import NoReturn

MISTAKE, FAULT = 2, 1


def fail(message: str, status: int = MISTAKE) -> NoReturn:
    """Print `error: message` (its first line only) on stderr and exit with `status`."""
    print(f"error: {first_line(message)}", file=sys.stderr)
    sys.exit(status)


def first_line(message) -> str:
    """The first non-blank line of a message or an exception; its type's name if it has none."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[0] if lines else type(message).__name__


def did_you_mean(word: str, choices) -> str:
    """' (did you mean `x`?)' for the closest of choices, or '' if none is close."""
    word = str(word)

    def closeness(choice: str) -> tuple[float, int]:  # ties go to the longer shared start
        return difflib.SequenceMatcher(None, word, choice).ratio(), len(os.path.commonprefix([word, choice]))

    scored = sorted(((closeness(str(c)), str(c)) for c in choices if str(c) != word), reverse=True)
    return f" (did you mean `{scored[0][1]}`?)" if scored and scored[0][0][0] >= 0.6 else ""


def unrecognized(parser: argparse.ArgumentParser, message: str) -> tuple[list[str], str | None, str]:
    """Of argparse's usage error `message`: the arguments it did not recognise, the first flag among
    them, and the closest of the parser's flags to it (did_you_mean)."""
    flags = [f for action in parser._actions for f in action.option_strings]  # noqa: SLF001
    unknown = message.split(": ", 1)[-1].split() if message.startswith("unrecognized arguments") else []
    flag = next((a for a in unknown if a.startswith("-")), None)
    return unknown, flag, did_you_mean(flag.split("=")[0], flags) if flag else ""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line, with the closest flag for a misspelled one."""

    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: {message}{unrecognized(self, message)[2]} (see {self.prog} --help)")


def positive_int(text: str) -> int:
    """An argparse type: a positive integer (else argparse's one-line usage error)."""
    return _int_from(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of 0 or more, a seed say (else argparse's one-line usage error)."""
    return _int_from(text, 0, "a non-negative integer")


def _int_from(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def plural(count: int, noun: str) -> str:
    """'1 run', '2 runs' (nouns with a plain plural only)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def results_dir_argument(path) -> None:
    """Exit 2 if a command's RESULTS_DIR argument names a file (a run table, say), not its folder."""
    if Path(path).is_file():
        fail(f"{path} is a file: give the results_dir that holds it ({Path(path).parent})")


def out_folder_argument(out) -> None:
    """Exit 2 if a command's --out, the folder it writes its files into, names a file."""
    if out is not None and Path(out).is_file():
        fail(f"--out {out} is a file: --out must be a folder")


def one_line(*mistakes: type[Exception]):
    """Decorate a command's main(): `mistakes` (say lab.knobs.ConfigError: passed in, as this module
    imports nothing of the lab) end in one line and exit 2, OSError in one line and exit 1 (2 for a
    path that does not exist, or a file where a folder is needed: the user's mistake)."""

    def decorate(main):
        @functools.wraps(main)
        def wrapped(*args, **kwargs):
            try:
                done = main(*args, **kwargs)
                sys.stdout.flush()  # a reader gone (`| head`) shows here, not in Python's flush at exit
                return done
            except mistakes as exc:
                fail(str(exc))
            except OSError as exc:
                if isinstance(exc, BrokenPipeError) and _reader_gone():
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit: quiet
                    sys.exit(128 + signal.SIGPIPE)  # as a tool stopped by SIGPIPE: 141, silently
                where = f"{exc.filename}: " if exc.filename else ""
                missing = isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError))
                fail(f"{where}{exc.strerror or exc}", MISTAKE if missing else FAULT)

        return wrapped

    return decorate


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader went away (`lab-summary DIR | head -1`), rather than
    some other pipe of the command breaking."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
    except (AttributeError, ValueError, OSError):  # stdout replaced (a test's StringIO) or closed
        return False
    return any(event & select.POLLERR for _, event in poll.poll(0))


def require_writable(folder, what: str = "results_dir") -> None:
    """Exit 1 in one line if `folder` (existing or to be created) cannot be written: checked by
    writing (and removing what it wrote), since permission bits say nothing for root or a read-only
    or full disk."""
    folder = Path(folder).absolute()
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        fail(f"{what} {folder} cannot be created: {existing} is a file")
    try:
        with tempfile.TemporaryDirectory(dir=existing, prefix=".lab-probe-") as probe:
            with open(os.path.join(probe, "probe"), "wb") as f:
                f.write(b"\0" * 4096)
                f.flush()
                os.fsync(f.fileno())
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        fail(f"{what} {folder} cannot be written (writing in {existing}: {reason})", FAULT)


def terminate_as_interrupt() -> None:
    """SIGTERM (`timeout`, `kill`, a batch scheduler) does what Ctrl-C does in this process, so
    the command's own Ctrl-C path stops what it started (forks, a local Ray, temporary folders).
    Later signals are ignored, as they would cut that stopping short. A fork of it just dies."""
    def stop_once(signum, frame):
        _ignore_signals()
        raise KeyboardInterrupt

    def handle(signum, frame):
        ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(ctrl_c):  # SIG_IGN: a Ctrl-C is being handled already
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a search holds its Ctrl-C: ignored here too
            ctrl_c(signal.SIGINT, frame)

    signal.signal(signal.SIGINT, _in_this_process(stop_once))
    signal.signal(signal.SIGTERM, _in_this_process(handle))


def stop_children_first() -> None:
    """Ctrl-C or SIGTERM in a command that runs others (the benchmark's sweeps): each child gets
    SIGTERM (a sweep's Ctrl-C) and a minute to stop what it started (subprocess.run would kill it
    at once, leaving its local Ray behind), then KeyboardInterrupt unwinds this process."""
    owner = os.getpid()

    def handle(signum, frame):
        _ignore_signals()  # once: a second signal changes nothing
        children = set(_children(owner))
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while children & set(_children(owner)) and time.monotonic() < deadline:
            time.sleep(0.1)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, _in_this_process(handle))
    signal.signal(signal.SIGTERM, _in_this_process(handle))


def _ignore_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _in_this_process(handle):
    """`handle` for the process that installs it; a fork of it, which inherits the handler,
    takes the signal's default action instead: it dies."""
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        handle(signum, frame)

    return handler


def _children(pid: int) -> list[int]:
    """The live child processes of pid, zombies left out (Linux's /proc; none elsewhere)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(ProcessLookupError, FileNotFoundError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(stat.parent.name))
    return out
