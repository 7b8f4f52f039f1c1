"""Tiny check runner shared by the Python client checks (stdlib only).

Each check prints one line to stdout, flushed at once:

    PASS <suite>: <check>
    FAIL <suite>: <check>: <reason>

compat/clients/run.sh counts these lines. A check that depends on another one that
failed is reported as FAIL with "skipped (depends on X)" and costs no time.
"""

import sys
import time
import traceback


class CheckFailed(AssertionError):
    pass


class Checks:
    def __init__(self, suite):
        self.suite = suite
        self.status = {}  # name -> bool
        self.started = time.monotonic()

    def run(self, name, fn, deps=()):
        """Run fn(); PASS if it returns, FAIL with the exception otherwise."""
        missing = [d for d in deps if not self.status.get(d, False)]
        if missing:
            self._report(name, False, "skipped (depends on %s)" % ", ".join(missing))
            return False
        t = time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            if isinstance(e, AssertionError):
                reason = str(e) or "assertion failed"
            else:
                reason = "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__
            if not isinstance(e, AssertionError):
                tb = traceback.extract_tb(e.__traceback__)
                if tb:
                    reason += " (at line %d)" % tb[-1].lineno
            self._report(name, False, reason, time.monotonic() - t)
            return False
        self._report(name, True, "", time.monotonic() - t)
        return True

    def _report(self, name, ok, reason, secs=0.0):
        self.status[name] = ok
        if ok:
            print("PASS %s: %s (%.1fs)" % (self.suite, name, secs), flush=True)
        else:
            reason = " ".join(str(reason).split())
            if len(reason) > 600:
                reason = reason[:600] + "..."
            print("FAIL %s: %s: %s" % (self.suite, name, reason), flush=True)

    def exit_code(self):
        return 0 if self.status and all(self.status.values()) else 1


def expect(got, want, what):
    if got != want:
        raise CheckFailed("%s: got %r, expected %r" % (what, got, want))


def eventually(fn, timeout=5.0, interval=0.1):
    """Retry fn() until it stops raising AssertionError (metadata can lag a create)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(interval)


def main_guard(checks, body):
    try:
        body()
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001
        print("FAIL %s: (script): %s: %s" % (checks.suite, type(e).__name__, e), flush=True)
        return 1
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit("checklib is a library")
