"""What the server's Python tests share: check() (exit on the first failure) and running the tests."""
import os
import sys
import time

passed = 0


def check(cond, what):
    """Counts a passed check; on a failed one prints what and exits 1."""
    global passed
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)
    passed += 1


def run(name, tests):
    """Runs each test function in order, timing it, then prints the total of checks passed. LLM170_ONLY
    (comma-separated names) runs only those, for a measurement by hand."""
    only = os.environ.get("LLM170_ONLY")
    for t in tests:
        if only and t.__name__ not in only.split(","):
            continue
        t0 = time.time()
        t()
        print(f"{t.__name__}: ok ({time.time() - t0:.2f} s)")
    print(f"{name}: {passed} checks passed")
