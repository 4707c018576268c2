"""Layer conformance suite: every layer kind on every discovered backend, against NumPy float64 oracles.

This directory is a package so that its conftest imports as `conformance.conftest` and
does not replace the top-level `conftest` module other test directories import from.
"""
