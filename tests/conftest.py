"""Hypothesis profiles. ``make test`` and CI use ``ci``: every property test draws the same
examples on every run (derandomized, no example database), so a run can only fail for a change in
the code. To search afresh for counterexamples, run the property tests with
``HYPOTHESIS_PROFILE=explore`` (random examples; failures are remembered in ``.hypothesis/``)."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
