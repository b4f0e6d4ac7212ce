"""The test suite, laid out like the code (docs/DESIGN.md, "Tests"): tests/<package>/test_<module>.py holds the
unit tests of one module; tests/system/, tests/loopback/ and tests/root/ hold whole runs (tests/conftest.py marks
them by folder)."""
from pathlib import Path

#: the project's checkout
ROOT = Path(__file__).resolve().parent.parent
#: the recorded outputs and golden files the tests read
DATA = ROOT / "tests" / "data"
