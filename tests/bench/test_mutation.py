"""bench/mutation.py's tables as data (issue 38, item 6): bench/mutation_tables/modules.toml and equivalent.toml,
loaded and checked; a wrong module, test path, test name, deselect or reason is an error naming the file and
the entry."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench import mutation
from bench.mutation import MutationTableError, load_equivalents, load_modules, load_tables
from tests import ROOT

GOOD = '''["routing/medium/rates.py"]
tests = ["tests/routing/medium/test_rates.py"]
only = ["tests/routing/medium/test_phy.py::test_airtime_arithmetic_80211b"]
deselect = ["tests/routing/medium/test_rates.py::test_dsss_hand_computed"]
'''


def modules_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "modules.toml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> str:
    path = modules_file(tmp_path, text)
    with pytest.raises(MutationTableError) as e:
        load_modules(path, ROOT)
    assert str(path) in str(e.value)            # the file is named
    return str(e.value)


def test_the_shipped_tables_load_and_name_only_what_exists() -> None:
    modules, equivalent = load_tables()
    assert "routing/medium/dcf.py" in modules and "tcp_user/connection.py" in modules
    for module, tests in modules.items():
        assert (ROOT / module).is_file()
        for ref in [*tests.tests, *tests.only, *tests.deselect]:
            assert (ROOT / ref.partition("::")[0]).is_file(), (module, ref)
    prefixes = tuple(m.removesuffix(".py").replace("/", ".") + "." for m in modules)
    assert equivalent and all(name.startswith(prefixes) for name in equivalent)
    assert all(line and why for line, why in equivalent.values())


def test_a_good_entry_gives_its_files_its_single_tests_and_what_is_left_out(tmp_path: Path) -> None:
    (entry,) = load_modules(modules_file(tmp_path, GOOD), ROOT).values()
    assert entry.selection == ["tests/routing/medium/test_rates.py",
                               "tests/routing/medium/test_phy.py::test_airtime_arithmetic_80211b"]
    assert entry.deselect == ["tests/routing/medium/test_rates.py::test_dsss_hand_computed"]


@pytest.mark.parametrize("text, says", [
    (GOOD.replace("routing/medium/rates.py", "routing/medium/rate.py"),
     "['routing/medium/rate.py']: routing/medium/rate.py does not exist"),
    (GOOD.replace("routing/medium/rates.py", "experiments/schema.py"), "['experiments/schema.py']: not a module of a core"),
    (GOOD.replace('tests = ["tests/routing/medium/test_rates.py"]', 'tests = ["tests/test_rates.py"]'),
     "['routing/medium/rates.py'].tests[0]: tests/test_rates.py does not exist"),
    (GOOD.replace("test_phy.py::test_airtime_arithmetic_80211b", "test_dcf.py::test_no_such_test"),
     "['routing/medium/rates.py'].only[0]: tests/routing/medium/test_dcf.py has no test test_no_such_test"),
    (GOOD.replace("test_phy.py::test_airtime_arithmetic_80211b", "test_dcf.py"),
     "['routing/medium/rates.py'].only[0]: 'tests/routing/medium/test_dcf.py' names no test"),
    (GOOD.replace("test_rates.py::test_dsss_hand_computed", "test_phy.py::test_airtime_arithmetic_80211b"),
     "['routing/medium/rates.py'].deselect[0]: tests/routing/medium/test_phy.py::test_airtime_arithmetic_80211b is "
     "not in one of the module's test files"),
    (GOOD.replace("tests/routing/medium/test_rates.py\"]", "bench/mutation.py\"]", 1),
     "['routing/medium/rates.py'].tests[0]: 'bench/mutation.py' is not a file under tests/"),
    (GOOD + 'test = ["tests/routing/medium/test_rates.py"]\n', "['routing/medium/rates.py']: unknown key test"),
    ("[\"routing/medium/rates.py\"\n", "modules.toml: "),
])
def test_a_wrong_entry_is_refused_naming_the_file_and_the_entry(tmp_path: Path, text: str, says: str) -> None:
    assert says in refused(tmp_path, text)


def equivalents_refused(tmp_path: Path, text: str) -> str:
    modules = load_modules(modules_file(tmp_path, GOOD), ROOT)
    path = tmp_path / "equivalent.toml"
    path.write_text(text)
    with pytest.raises(MutationTableError) as e:
        load_equivalents(path, ROOT, modules)
    assert str(path) in str(e.value)
    return str(e.value)


MUTANT = '[[mutant]]\nname = "routing.medium.rates.x_dsss_rate__mutmut_1"\nline = "x = 1"\n'


@pytest.mark.parametrize("text, says", [
    ('[reasons]\nSAME = "the same"\n\n' + MUTANT + 'reason = "SAMe"\n', "reason 'SAMe' is not under [reasons]"),
    (MUTANT + 'why = "w"\nreason = "SAME"\n', "exactly one of reason"),
    (MUTANT, "exactly one of reason"),
    (MUTANT.replace("routing.medium.rates", "routing.medium.dcf") + 'why = "w"\n',
     "not a mutant of a module of modules.toml"),
    (MUTANT + 'why = "w"\n\n' + MUTANT + 'why = "w"\n', "listed twice"),
    (MUTANT.replace('line = "x = 1"', 'line = ""') + 'why = "w"\n', "a name and the mutated line are expected"),
])
def test_a_wrong_equivalent_is_refused_naming_the_file_and_the_mutant(tmp_path: Path, text: str, says: str) -> None:
    message = equivalents_refused(tmp_path, text)
    assert "mutant[" in message and says in message


def test_a_shared_reason_is_written_once_and_given_to_each_of_its_mutants(tmp_path: Path) -> None:
    modules = load_modules(modules_file(tmp_path, GOOD), ROOT)
    path = tmp_path / "equivalent.toml"
    path.write_text('[reasons]\nSAME = "at equality it stores the value it has"\n\n' + MUTANT + 'reason = "SAME"\n\n'
                    + MUTANT.replace("mutmut_1", "mutmut_2") + 'why = "its own"\n')
    assert load_equivalents(path, ROOT, modules) == {
        "routing.medium.rates.x_dsss_rate__mutmut_1": ("x = 1", "at equality it stores the value it has"),
        "routing.medium.rates.x_dsss_rate__mutmut_2": ("x = 1", "its own")}


def test_the_mutmut_table_selects_the_files_and_single_tests_and_deselects_the_rest() -> None:
    table = mutation.mutmut_table("aspan/adaptive.py")
    modules, _ = load_tables()
    entry = modules["aspan/adaptive.py"]
    for ref in entry.selection:
        assert f'"{ref}"' in table.split("pytest_add_cli_args_test_selection")[1]
    for ref in entry.deselect:
        assert f'"--deselect", "{ref}"' in table
