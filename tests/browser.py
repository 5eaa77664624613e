"""Headless Chromium driven over the Chrome DevTools protocol, for tests of the HTML report.

The protocol runs over a pair of pipes (`--remote-debugging-pipe`: JSON messages ended by a NUL
byte on file descriptors 3 and 4), so the test needs neither a WebDriver, nor a websocket
library, nor a port: only Debian's `chromium` package. The browser has no network: every request
but file: and data: goes to a proxy that does not exist, and the test records any it attempts;
`Browser(loopback="127.0.0.1:PORT")` lets requests to that one local server through (a test's own
server, such as `mlflow server`).
"""

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--proxy-server=127.0.0.1:9",
         # WebGL (Plotly's parallel coordinates) on the CPU: no GPU here
         "--enable-unsafe-swiftshader", "--window-size=1400,1000", "--remote-debugging-pipe"]


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; `with Browser() as b: b.open(path)`."""

    def __init__(self, loopback: str | None = None):
        # <-loopback>: local addresses go to the missing proxy too, but the one allowed
        bypass = "<-loopback>" + (f";{loopback}" if loopback else "")
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        def pipes_as_3_and_4():  # in the child, before exec: Chromium reads fd 3, writes fd 4
            read, write = os.dup(to_browser_r), os.dup(from_browser_w)  # out of the way of 3, 4
            os.dup2(read, 3)
            os.dup2(write, 4)

        # close_fds=False: Python's other descriptors are not inheritable anyway (PEP 446), and
        # subprocess would close 3 and 4 after pipes_as_3_and_4 otherwise
        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--proxy-bypass-list={bypass}", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=pipes_as_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._next_id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _message(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the protocol pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, timeout: float = 60, **params) -> dict:
        """Send one command and wait for its answer, keeping the events that come meanwhile."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message(timeout)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def open(self, path: Path | str, timeout: float = 60) -> None:
        """Load a file (or an http:// URL) and wait for its load event."""
        url = path if str(path).startswith("http://") else Path(path).resolve().as_uri()
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._message(deadline - time.monotonic()))

    def run(self, expression: str, timeout: float = 60):
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path | None = None):
        """The page as an RGB(A) array of floats in [0, 1]; also saved to `path` if given."""
        import matplotlib.pyplot as plt

        png = base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"])
        if path is not None:
            Path(path).write_bytes(png)
        return plt.imread(io.BytesIO(png), format="png")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("exception", {}).get("description", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def requests(self) -> list[str]:
        """Every URL the page asked for."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]
