"""The ``netns`` fixture of every root test: skips (or fails under ASPAN_REQUIRE_ROOT_TESTS=1) without the
prerequisites, and checks that the test's own runs left no namespace, interface, process or iptables rule.
"""
import re
import pytest
from tests.runs import REQUIRED, assert_nothing_left
from experiments.backends.netns.sh import missing_prerequisites, run


def _root_iptables() -> list[str]:
    """The root namespace's legacy rules, without what changes by itself once any legacy table is loaded
    there: iptables-save's "# Generated/Completed on <time>" comments and the chains' packet counters."""
    out = run(["iptables-legacy-save"], check=False).stdout
    return [re.sub(r"\[\d+:\d+\]$", "[counters]", line) for line in out.splitlines() if not line.startswith("#")]


# What names a netns run on the host: its namespaces aspn-<run id>-<node>, its interfaces an<run id><link><a|b>
# (experiments.backends.netns.state); a virtual Pi's namespaces are aspv-*.
_RUN_NAME = re.compile(r"aspn-([0-9a-f]{6})-|\ban([0-9a-f]{6})(?:\d+[ab]\b|\+)|\baspv-")


def _names_another_run(line: str, ours: set[str]) -> bool:
    """A rule naming a netns run or virtual Pi that is not ours (another test or agent on the machine)."""
    return any(not ({m.group(1), m.group(2)} & ours) for m in _RUN_NAME.finditer(line))


@pytest.fixture
def netns(tmp_path):
    """Skip (or fail under ASPAN_REQUIRE_ROOT_TESTS=1) without the prerequisites; check that nothing of the
    test's own runs is left after (issue 27, item 8: runs of others at the same time are not ours)."""
    missing = missing_prerequisites()
    if missing:
        msg = "netns backend tests need " + "; ".join(missing)
        if REQUIRED:
            pytest.fail(msg + " (ASPAN_REQUIRE_ROOT_TESTS=1: these tests must run here)")
        pytest.skip(msg)
    before_rules = _root_iptables()
    yield tmp_path
    ours = assert_nothing_left(tmp_path)
    after_rules = _root_iptables()
    changed = [("+" + r) for r in after_rules if r not in before_rules] + \
              [("-" + r) for r in before_rules if r not in after_rules]
    changed = [r for r in changed if not _names_another_run(r, ours)]
    assert not changed, f"the root namespace's iptables rules changed: {changed}"
