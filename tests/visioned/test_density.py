"""Density, canonical frame, cache and input validation (spec §8)."""

import numpy as np
import pytest

from icml26.visioned import EDCalculator, EDRecord, canonical_frame, check_no_leakage, render_multishot
from icml26.visioned.density import (
    BOHR,
    COMP_KEYS,
    LABEL_KEYS,
    PHYS_KEYS,
    compute_record,
    density_on_points,
    read_cube,
    write_cube,
)


def test_density_integrates_to_electron_count_on_molecular_grid(water):
    from pyscf import dft

    mol = water.to_pyscf()
    grids = dft.gen_grid.Grids(mol)
    grids.level = 3
    grids.build()
    rho = density_on_points(mol, water.dm, grids.coords * BOHR)
    assert abs(float(rho @ grids.weights) - 10.0) < 1e-4


def test_fine_cube_sum_close_to_electron_count(water):
    rec = compute_record(water.atoms, water.coords, grid_spacing=0.10, margin=3.0, canonicalize=False)
    total = rec.cube.astype(np.float64).sum() * (rec.spacing / BOHR) ** 3
    assert abs(total - 10.0) / 10.0 < 0.02
    # float16 storage: relative error < 1e-3 where rho >= iso
    exact = density_on_points(rec.to_pyscf(), rec.dm, rec.grid_points()).reshape(rec.cube.shape)
    sel = exact >= 0.05
    assert sel.sum() > 100
    assert np.max(np.abs(rec.cube[sel].astype(np.float64) - exact[sel]) / exact[sel]) < 1e-3


def test_labels_and_pretext_are_physical(tiny):
    w = tiny["O"]
    assert 5 < w.props["gap_eV"] < 40
    assert 1.0 < w.props["dipole_D"] < 3.0  # STO-3G water ~1.7 D
    assert w.pretext["n_electrons"] == 10 and w.pretext["count_O"] == 1 and w.pretext["count_H"] == 2
    assert w.pretext["esp_min"] < 0 < w.pretext["esp_max"]
    assert abs(sum(w.mulliken)) < 1e-6  # charges ESP model is neutral for a neutral molecule
    ch4 = tiny["C"]
    assert ch4.props["dipole_D"] < 0.05  # symmetric


def test_canonical_frame_is_invariant_to_rigid_motion(water, calc):
    rng = np.random.default_rng(0)
    Q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(r))
    Q[:, 0] *= np.sign(np.linalg.det(Q))  # proper rotation
    moved = water.coords @ Q.T + rng.normal(size=3) * 3
    axes, centre = canonical_frame(water.atoms, moved)
    back = (moved - centre) @ axes.T
    # the same point set (water's C2 may swap its two H atoms: a symmetry, same density and images)
    assert _set_distance(water.atoms, back, water.atoms, water.coords) < 1e-5
    rec2 = calc.compute_atoms(water.atoms, moved)
    a, b = render_multishot(water), render_multishot(rec2)
    assert np.abs(a.astype(float) - b.astype(float)).mean() < 2.0  # < 2/255 in pixel units


def _set_distance(za, a, zb, b) -> float:
    """Largest displacement of the best same-element matching between two point sets."""
    from scipy.optimize import linear_sum_assignment

    d = np.linalg.norm(np.asarray(a)[:, None] - np.asarray(b)[None], axis=-1) + 1e3 * (za[:, None] != zb[None])
    r, c = linear_sum_assignment(d)
    return float(d[r, c].max())


def _ring(elems, subs, radius=1.39, bond=1.09):
    z, x = [], []
    for k, (e, s) in enumerate(zip(elems, subs)):
        a = np.pi / 3 * k
        z.append(e)
        x.append([radius * np.cos(a), radius * np.sin(a), 0.0])
        if s:
            z.append(s)
            x.append([(radius + bond) * np.cos(a), (radius + bond) * np.sin(a), 0.0])
    return np.array(z), np.array(x)


SYMMETRIC = {  # idealised geometries: exact symmetry, so ties must be decided without the atom order
    "benzene": _ring([6] * 6, [1] * 6),
    "4-F-pyridine": _ring([7, 6, 6, 6, 6, 6], [0, 1, 1, 9, 1, 1]),
    "p-difluorobenzene": _ring([6] * 6, [9, 1, 1, 9, 1, 1]),
    "1,3,5-trifluorobenzene": _ring([6] * 6, [9, 1, 9, 1, 9, 1]),
    "methane": (np.array([6, 1, 1, 1, 1]), np.array([[0, 0, 0], [1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]])
                * np.array([[0], [0.63], [0.63], [0.63], [0.63]])),
    "acetylene": (np.array([6, 6, 1, 1]), np.array([[0.6, 0, 0], [-0.6, 0, 0], [1.66, 0, 0], [-1.66, 0, 0]])),
}


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_canonical_frame_does_not_depend_on_atom_order(name):
    """Shuffled atoms (and a rigid motion) give the same frame: canonical coordinates permute with the atoms."""
    z, x = SYMMETRIC[name]
    rng = np.random.default_rng(0)
    axes, centre = canonical_frame(z, x)
    ref = (x - centre) @ axes.T
    for _ in range(12):
        p = rng.permutation(len(z))
        a2, c2 = canonical_frame(z[p], x[p])
        assert np.allclose(a2, axes, atol=1e-9) and np.allclose(c2, centre, atol=1e-12)
        assert np.allclose((x[p] - c2) @ a2.T, ref[p], atol=1e-9)
        Q, r = np.linalg.qr(rng.normal(size=(3, 3)))
        Q = Q * np.sign(np.diag(r))
        Q[:, 0] *= np.sign(np.linalg.det(Q))
        moved = x[p] @ Q.T + rng.normal(size=3)
        a3, c3 = canonical_frame(z[p], moved)
        assert _set_distance(z[p], (moved - c3) @ a3.T, z, ref) < 1e-6


def test_conformer_frames_and_images_do_not_depend_on_atom_order(calc):
    from icml26.visioned.density import conformer_from_smiles

    rng = np.random.default_rng(1)
    for smi in ("c1ccccc1", "Fc1ccncc1", "Fc1ccc(F)cc1"):
        z, x, _ = conformer_from_smiles(smi, 0)
        axes, centre = canonical_frame(z, x)
        p = rng.permutation(len(z))
        a2, c2 = canonical_frame(z[p], x[p])
        assert np.allclose(a2, axes, atol=1e-9), smi
    z, x, _ = conformer_from_smiles("C=C", 0)  # images of a shuffled input through the whole pipeline
    p = rng.permutation(len(z))
    a, b = render_multishot(calc.compute_atoms(z, x)), render_multishot(calc.compute_atoms(z[p], x[p]))
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


def test_cache_roundtrip_and_reuse(calc, tiny):
    p = calc.cache_path("O")
    assert p is not None and p.exists()
    rec = EDRecord.load(p)
    assert np.array_equal(rec.cube, tiny["O"].cube) and rec.props == tiny["O"].props
    again = calc.compute(["O"], progress=False)[0]
    assert np.array_equal(again.cube, tiny["O"].cube)


def test_cube_file_roundtrip(tmp_path, water):
    write_cube(water, tmp_path / "w.cube")
    rec = read_cube(tmp_path / "w.cube")
    assert rec.cube.shape == water.cube.shape
    assert np.allclose(rec.origin, water.origin, atol=1e-5) and abs(rec.spacing - water.spacing) < 1e-6
    assert np.allclose(rec.cube.astype(float), water.cube.astype(float), rtol=2e-3, atol=1e-6)


def test_bad_inputs_raise_value_errors(calc):
    with pytest.raises(ValueError, match="smiles"):
        calc.compute(["C1CC"], progress=False)
    with pytest.raises(ValueError, match="UHF"):
        calc.compute(["[CH3]"], progress=False)
    with pytest.raises(ValueError, match="basis"):
        EDCalculator(basis="6-31g", cache_dir="").compute_atoms(["Xe"], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="grid_spacing"):
        EDCalculator(grid_spacing=0)
    with pytest.raises(ValueError, match="n_workers"):
        EDCalculator(n_workers=0)


def test_leakage_guard():
    assert not set(PHYS_KEYS + COMP_KEYS) & set(LABEL_KEYS)
    check_no_leakage(PHYS_KEYS, ["gap_eV"])
    with pytest.raises(ValueError, match="gap_eV"):
        check_no_leakage(list(PHYS_KEYS) + ["gap_eV"], ["dipole_D"])
