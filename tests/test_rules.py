"""course_utils.checks.rules: the scan of a learner's code and the read-once stream, each on its
own (the constrain checkers that use them are tested by their tables)."""

import functools
from pathlib import Path

import numpy as np
import pytest
from numpy import searchsorted as find_place  # an alias: the scan sees the object behind it

from course_utils.checks import rules
from course_utils.checks.rules import Rule, RuleBroken, Stream, broken, scan, shortcut

NO_SEARCH = Rule("to compare with the running totals yourself", names={"searchsorted"})
NO_LOOP = Rule("no Python loop", loops=True)
NO_MATMUL = Rule("one row at a time", matmul=True)


def by_attribute(totals, u):
    return np.searchsorted(totals, u)


def by_alias(totals, u):
    return find_place(totals, u)


search_later = functools.partial(np.searchsorted, side="right")


def by_partial(totals, u):
    return search_later(totals, u)


def _count_below(totals, u):  # the learner's own helper
    return (totals[None, :] <= u[:, None]).sum(axis=1)


def by_comparison(totals, u):
    return _count_below(totals, u)


def searchsorted(totals, u):  # the learner's own function may have any name
    return (totals[None, :] <= u[:, None]).sum(axis=1)


def by_own_searchsorted(totals, u):
    return searchsorted(totals, u)


def _helper_that_searches(totals, u):
    return np.searchsorted(totals, u, side="right")


def by_helper_that_searches(totals, u):
    return _helper_that_searches(totals, u)


@pytest.mark.parametrize("func, verdict", [
    (by_attribute, "it calls searchsorted: the rule is to compare with the running totals "
                   "yourself"),
    (by_alias, "it calls searchsorted"),
    (by_partial, "it calls searchsorted"),
    (by_helper_that_searches, "it calls searchsorted"),
    (np.searchsorted, "it calls searchsorted"),  # the library function given as the answer
    (by_comparison, None),
    (by_own_searchsorted, None),  # exempt by where it is defined, not by its name
])
def test_the_name_scan_sees_attributes_aliases_and_helpers_and_exempts_the_learner_s_own(
        func, verdict):
    found = broken(func, NO_SEARCH)
    assert found == verdict if verdict is None else found.startswith(verdict)


def looped(x):
    total = 0.0
    for value in x:
        total += value
    return total


def comprehended(x):
    return sum([value for value in x])


def while_looped(x):
    i, total = 0, 0.0
    while i < len(x):
        total, i = total + x[i], i + 1
    return total


def vectorized(x):
    return np.sum(x)


@pytest.mark.parametrize("func, verdict", [
    (looped, "it has a for loop: the rule is no Python loop"),
    (comprehended, "it has a comprehension: the rule is no Python loop"),
    (while_looped, "it has a while loop: the rule is no Python loop"),
    (vectorized, None),
])
def test_the_scan_sees_every_kind_of_loop(func, verdict):
    assert broken(func, NO_LOOP) == verdict


def test_the_scan_sees_matmul_in_a_nested_function_and_a_lambda():
    def outer(a, b):
        def inner(x):
            return x @ b
        return inner(a)

    product = lambda a, b: a @ b  # noqa: E731
    for func in (outer, product):
        assert broken(func, NO_MATMUL) == "it multiplies with @: the rule is one row at a time"
    assert broken(lambda a, b: a * b, NO_MATMUL) is None
    namespace: dict = {}
    exec("def unread(a):\n    return a @ a", namespace)  # no source to read: names only
    assert scan(outer).readable and not scan(namespace["unread"]).readable


@np.vectorize
def _one_position(p):  # the learner's helper, wrapped in a library object
    return float(p) ** 0.5


def by_vectorized_helper(positions):
    return _one_position(positions)


def test_a_helper_wrapped_in_a_library_object_is_seen_by_the_wrapper_s_name():
    rule = Rule("no Python loop", names={"vectorize"}, loops=True)
    assert broken(by_vectorized_helper, rule) == "it calls vectorize: the rule is no Python loop"


def test_the_learner_s_own_variables_are_not_library_calls():
    def by_rows(a, b):
        inner = a.shape[1]  # a variable may share a library function's name
        dot = [sum(a[i, p] * b[p] for p in range(inner)) for i in range(a.shape[0])]
        return np.array(dot)

    def imports_inside(a, b):
        from numpy import dot as product
        return product(a, b)

    rule = Rule("row by row", names={"inner", "dot"})
    assert broken(by_rows, rule) is None
    assert broken(imports_inside, rule) == "it calls dot: the rule is row by row"


def test_a_shortcut_is_a_note_never_a_verdict():
    assert shortcut(by_attribute, ["searchsorted"]) == (
        "passes; it calls searchsorted, and the exercise is to write that step yourself")
    assert shortcut(by_comparison, ["searchsorted"]) is None


def test_scan_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="func must be a function, got int"):
        scan(3)


def running_max(stream):
    best = -np.inf
    for chunk in stream:
        best = max(best, float(chunk.max()))
    return best


def kept_max(stream):
    kept = list(stream)  # references to the one buffer
    return max(float(chunk.max()) for chunk in kept)


def test_a_stream_is_read_once_and_a_kept_item_goes_stale():
    chunks = [np.array([1.0, 9.0]), np.array([2.0, 3.0]), np.array([4.0])]
    assert running_max(Stream(chunks, "chunk")) == 9.0
    assert kept_max(Stream(chunks, "chunk")) == 4.0  # every kept chunk shows the last one's data
    stream = Stream(chunks, "chunk")
    running_max(stream)
    with pytest.raises(RuleBroken, match="it reads the chunks a second time"):
        running_max(stream)
    assert repr(stream) == "Stream(3 chunks, read)"


def test_a_stream_of_pairs_hands_out_tuples_and_needs_an_item():
    pairs = [(np.ones((2, 3)), np.zeros((2, 4))), (np.ones((1, 3)), np.zeros((1, 4)))]
    shapes = [(k.shape, v.shape) for k, v in Stream(pairs, "block")]
    assert shapes == [((2, 3), (2, 4)), ((1, 3), (1, 4))]
    with pytest.raises(ValueError, match="items must hold at least one item"):
        Stream([])


def test_no_checker_touches_a_library_while_an_answer_runs():
    """The policy of CONTRIBUTING.md: checks/ reads code and values, and patches nothing."""
    folder = Path(rules.__file__).parent
    for path in sorted(folder.glob("*.py")):
        source = path.read_text()
        for forbidden in ("setattr(", "settrace", "setprofile", "TorchFunctionMode",
                          "TorchDispatchMode", "tracemalloc", "import dis"):
            assert forbidden not in source, f"{path.name} uses {forbidden}"
