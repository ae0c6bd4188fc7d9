"""Shared fixtures: six tiny molecules (RHF/STO-3G, < 5 s of QM) computed once per test session."""

import pytest

TINY = ["O", "N", "C", "F", "[C-]#[O+]", "C=C"]  # H2O, NH3, CH4, HF, CO, C2H4


@pytest.fixture(scope="session")
def calc(tmp_path_factory):
    from icml26.visioned import EDCalculator

    return EDCalculator(cache_dir=tmp_path_factory.mktemp("ed"), n_workers=1)


@pytest.fixture(scope="session")
def tiny(calc):
    recs = calc.compute(TINY, progress=False)
    return dict(zip(TINY, recs))


@pytest.fixture(scope="session")
def water(tiny):
    return tiny["O"]

