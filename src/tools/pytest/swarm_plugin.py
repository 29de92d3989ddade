"""swarm's pytest plugin: a time limit per test, and results as they finish.

Embedded in the swarm binary, written to the pytest process's private
sandbox folder, put on PYTHONPATH and loaded with ``-p``. It needs nothing
but the standard library and pytest.

* ``--swarm-case-timeout=SECONDS`` (0 disables): every test (setup, call and
  teardown) runs under a SIGALRM timer. When it expires, the handler raises
  ``CaseTimeout`` where the test is (also inside ``time.sleep`` or a blocking
  read: PEP 475 runs the handler), records the stack at that moment, and the
  test is reported failed with "timed out after N s" and that stack. If the
  code swallows the exception, it is raised again every second; code that
  swallows it forever, blocks SIGALRM or holds the GIL in C is left to
  swarm's whole-run limit.
* ``--swarm-results=FILE``: one JSON object per line, flushed as it
  happens: the collected ids, each test's start, and every report. swarm
  reads it when pytest was killed before writing its junit XML.
* ``--swarm-only=FILE``: run only the tests whose node ids FILE lists (one
  a line); the others are deselected, after every collected id is written
  to the results file (event ``selection``), so swarm knows what a full run
  would have run.
* ``--swarm-stack-file=FILE`` with ``--swarm-run-deadline=EPOCH_SECONDS``:
  faulthandler dumps every thread's stack into FILE shortly before swarm's
  whole-run limit, so the test that was running then still gets a stack.
* Benchmarks (pytest-benchmark, pytest-codspeed) run as plain tests, once
  and untimed: a Judge pass checks that they pass, not how fast.
* The results out of reach of the code under test: once pytest has written
  its junit XML, the results file gets an ``end`` event with the XML's
  sha256 and the exit status, and the process ends right there
  (``os._exit``): no ``atexit`` handler, finalizer or thread of the code
  under test runs after the tests to rewrite either file. swarm refuses
  results whose XML does not match the ``end`` event, that have lines after
  it, or whose XML says passed where the stream says otherwise.
"""

import faulthandler
import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback

import pytest

# How often a swallowed timeout is raised again.
_REPEAT_SECONDS = 1.0
# The most frames a timeout's stack shows (the innermost ones).
_MAX_FRAMES = 30


class CaseTimeout(BaseException):
    """Raised in a test that ran past its limit. A BaseException, so
    ``except Exception`` in the code under test does not swallow it."""


def pytest_addoption(parser):
    group = parser.getgroup("swarm", "swarm's test guard")
    group.addoption("--swarm-case-timeout", type=float, default=0.0,
                    help="seconds one test may run; 0 disables")
    group.addoption("--swarm-results", default=None,
                    help="write per-test results to this JSON-lines file")
    group.addoption("--swarm-only", default=None,
                    help="run only the node ids listed in this file, one a line")
    group.addoption("--swarm-stack-file", default=None,
                    help="faulthandler dumps stacks here before the run deadline")
    group.addoption("--swarm-run-deadline", type=float, default=0.0,
                    help="when swarm kills the whole run, in seconds since the epoch")


class _Results:
    """The JSON-lines file, one flushed line per event."""

    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8") if path else None

    def write(self, **record):
        if self._file is None:
            return
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


class _Guard:
    """The timer of the test that runs now."""

    def __init__(self, seconds, rootdir):
        self.seconds = seconds
        self.rootdir = rootdir
        self.item = None
        self.stack = None
        self.fired = False
        self.reported = False
        self._previous = None

    def usable(self):
        return (self.seconds > 0 and hasattr(signal, "setitimer")
                and threading.current_thread() is threading.main_thread())

    def arm(self, item):
        self.item, self.stack, self.fired, self.reported = item, None, False, False
        if not self.usable():
            return
        self._previous = signal.signal(signal.SIGALRM, self._expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def disarm(self):
        if self.usable() and self._previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
        self._previous = None

    def message(self):
        return "timed out after %s s" % _seconds(self.seconds)

    def _expired(self, _signum, frame):
        __tracebackhide__ = True
        if not self.fired:
            self.fired = True
            self.stack = _format_stack(frame, self.item, self.rootdir)
        signal.setitimer(signal.ITIMER_REAL, _REPEAT_SECONDS)
        raise CaseTimeout(self.message())


class _TimeoutRepr:
    """A failure report's body: the message and the stack of the test when
    it was stopped. junit XML takes ``reprcrash.message`` as the failure
    message and ``str()`` as its text."""

    def __init__(self, message, text, item):
        path, lineno, _ = item.location
        self.reprcrash = _Crash(path, (lineno or 0) + 1, message)
        self._text = text

    def toterminal(self, out):
        for line in self._text.splitlines():
            out.line(line)

    def __str__(self):
        return self._text


class _Crash:
    def __init__(self, path, lineno, message):
        self.path, self.lineno, self.message = path, lineno, message


def _seconds(value):
    return ("%d" % value) if float(value).is_integer() else ("%g" % value)


def _format_stack(frame, item, rootdir):
    """The stack from the test's own frames down to where it was stopped,
    paths relative to the rootdir."""
    frames = traceback.extract_stack(frame)
    test_file = str(getattr(item, "path", None) or getattr(item, "fspath", ""))
    start = next((i for i, f in enumerate(frames) if f.filename == test_file), None)
    if start is None:
        start = next((i for i, f in enumerate(frames)
                      if f.filename.startswith(rootdir + os.sep)), 0)
    frames = frames[start:][-_MAX_FRAMES:]
    for f in frames:
        _ = f.line  # read the source line before the path is shortened
        if f.filename.startswith(rootdir + os.sep):
            f.filename = os.path.relpath(f.filename, rootdir)
    return "".join(traceback.format_list(frames)).rstrip("\n")


class SwarmPlugin:
    def __init__(self, config):
        self.results = _Results(config.getoption("swarm_results"))
        rootdir = getattr(config, "rootpath", None) or config.rootdir
        self.guard = _Guard(config.getoption("swarm_case_timeout") or 0.0, str(rootdir))
        self._stack_file = None
        self._deadline = config.getoption("swarm_run_deadline") or 0.0
        self.session = None
        self.ended = False
        path = config.getoption("swarm_stack_file")
        if path and self._deadline > 0:
            self._stack_file = open(path, "w", encoding="utf-8")
        self._arm_stack_dump()

    def _arm_stack_dump(self):
        """(Re)arms faulthandler to dump every stack into the stack file
        shortly before the deadline. pytest cancels that timer whenever a
        test fails (``pytest_exception_interact``), so this runs again
        around every test."""
        if self._stack_file is None:
            return
        # The deadline is a wall-clock time: swarm's timer started when it
        # spawned this process, before the interpreter and pytest loaded.
        left = self._deadline - time.time()
        left -= min(1.0, left * 0.1)
        if left > 0:
            faulthandler.dump_traceback_later(left, repeat=False, file=self._stack_file)

    def pytest_sessionstart(self, session):
        self.session = session

    # Last, so pytest's junit XML is written: its digest goes into the
    # stream, which ends there.
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.session = session
        path = getattr(session.config.option, "xmlpath", None)
        digest = None
        if path:
            try:
                with open(path, "rb") as xml:
                    digest = hashlib.sha256(xml.read()).hexdigest()
            except OSError:
                digest = None
        self.results.write(event="end", exitstatus=int(session.exitstatus),
                           junit_sha256=digest)
        self.ended = True

    def close(self):
        if self._stack_file is not None:
            faulthandler.cancel_dump_traceback_later()
            self._stack_file.close()
            self._stack_file = None
        self.results.close()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        path = config.getoption("swarm_only")
        if not path:
            return
        with open(path, encoding="utf-8") as listing:
            wanted = {line.rstrip("\n") for line in listing if line.strip()}
        self.results.write(event="selection", all=[i.nodeid for i in items])
        kept = [i for i in items if i.nodeid in wanted]
        dropped = [i for i in items if i.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_collection_finish(self, session):
        self.results.write(event="collected", ids=[i.nodeid for i in session.items])

    def pytest_collectreport(self, report):
        if report.failed or report.skipped:
            self.results.write(event="report", id=report.nodeid, when="collect",
                               outcome=report.outcome, **_texts(report))

    def pytest_runtest_logstart(self, nodeid, location):
        self.results.write(event="start", id=nodeid)

    def pytest_runtest_logreport(self, report):
        self.results.write(event="report", id=report.nodeid, when=report.when,
                           outcome=report.outcome, **_texts(report))

    # Outermost, so a limit the project sets with pytest-timeout (armed
    # inside this one) takes over for the tests it covers.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._arm_stack_dump()
        self.guard.arm(item)
        try:
            yield
        finally:
            self.guard.disarm()
            self._arm_stack_dump()

    @pytest.hookimpl(trylast=True)
    def pytest_exception_interact(self, node, call, report):
        self._arm_stack_dump()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        guard = self.guard
        if guard.item is not item or not guard.fired or guard.reported:
            return
        guard.reported = True
        report = outcome.get_result()
        message = guard.message()
        text = "%s (swarm's per-test limit)\n" % message
        text += "Stack of the test when it was stopped (most recent call last):\n"
        text += guard.stack or "  (not available)"
        report.outcome = "failed"
        report.longrepr = _TimeoutRepr(message, text, item)
        if hasattr(report, "wasxfail"):
            del report.wasxfail


def _texts(report):
    """The message and the long text of a report that did not pass."""
    if report.passed:
        return {}
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return {"message": str(longrepr[2]), "details": ""}
    crash = getattr(longrepr, "reprcrash", None)
    details = report.longreprtext
    message = crash.message if crash is not None else details.strip().split("\n")[0]
    return {"message": message, "details": details}


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Benchmarks run as plain tests, once and untimed: pytest-benchmark's
    ``--benchmark-disable`` (unless the project asks for benchmarks only,
    which that option refuses), and pytest-codspeed's measurement off. Set
    once the options are read and before any plugin configures itself."""
    _calm_benchmarks(config)


def _calm_benchmarks(config):
    option = config.option
    if hasattr(option, "benchmark_disable") and not getattr(option, "benchmark_only", False):
        option.benchmark_disable = True
        if hasattr(option, "benchmark_enable"):
            option.benchmark_enable = False
    if hasattr(option, "codspeed"):
        option.codspeed = False


def pytest_configure(config):
    config.pluginmanager.register(SwarmPlugin(config), "swarm-guard")


# Last of all: the results are written, nothing of the code under test may
# run after them.
@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    plugin = config.pluginmanager.get_plugin("swarm-guard")
    if plugin is None:
        return
    plugin.close()
    session = plugin.session
    if not plugin.ended or session is None:
        return
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        try:
            capman.stop_global_capturing()
        except Exception:  # pylint: disable=broad-except
            pass
    # The import guard (when swarm put one in this process) says where the
    # project's modules came from at exit, and os._exit runs no atexit
    # handler: it says so now.
    guard = sys.modules.get("_swarm_worktree")
    if guard is not None:
        try:
            guard.report_now()
        except Exception:  # pylint: disable=broad-except
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pylint: disable=broad-except
            pass
    os._exit(int(session.exitstatus))
