"""Renderer, ESP and point-cloud tests (spec §8)."""

import numpy as np
import pytest

from icml26.visioned import ed_point_cloud, esp_exact, farthest_point_sampling, render_multishot
from icml26.visioned.density import BOHR, density_on_points


def test_single_atom_gives_centred_disc_of_iso_radius(calc):
    he = calc.compute_atoms(["He"], np.zeros((1, 3)))
    iso, size, fov = 0.05, 32, 6.0
    # iso radius from the basis functions themselves (bisection on the exact rho(r))
    lo, hi = 0.01, 3.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        rho = density_on_points(he.to_pyscf(), he.dm, np.array([[mid, 0, 0]]))[0]
        lo, hi = (mid, hi) if rho > iso else (lo, mid)
    r_px = lo / (fov / size)
    img = render_multishot(he, size=size, fov=fov, isovalues=(iso,))
    for shot in img:
        hit = shot[3] > 0
        radius = np.sqrt(hit.sum() / np.pi)
        assert abs(radius - r_px) <= 1.0
        rr, cc = np.nonzero(hit)
        assert abs(rr.mean() - (size - 1) / 2) < 0.5 and abs(cc.mean() - (size - 1) / 2) < 0.5
        assert shot[3][~hit].max() == 0 and shot[:3][:, ~hit].max() == 0  # background: depth 0


def test_opposite_shots_of_centrosymmetric_molecule_are_mirror_images(calc):
    # ethene, exactly centrosymmetric geometry
    c, h = 0.667, (1.23, 0.92)
    coords = np.array([[c, 0, 0], [-c, 0, 0], [h[0], h[1], 0], [h[0], -h[1], 0], [-h[0], h[1], 0],
                       [-h[0], -h[1], 0]])
    rec = calc.compute_atoms(["C", "C", "H", "H", "H", "H"], coords)
    img = render_multishot(rec).astype(float)
    for k in (0, 2, 4):
        assert np.abs(img[k + 1] - img[k][:, ::-1, :]).mean() < 1.0


def test_water_esp_colours_oxygen_red_hydrogens_blue(water):
    img = render_multishot(water, shade=False).astype(float)
    o = water.coords[0]  # canonical frame: find the axis separating O from the H atoms
    axis = int(np.argmax(np.abs(water.coords[1:].mean(0) - o)))
    o_side = 2 * axis + (0 if o[axis] > water.coords[1:, axis].mean() else 1)  # camera on the O side
    h_side = o_side ^ 1
    for k, (redder) in ((o_side, True), (h_side, False)):
        hit = img[k, 3] > 0
        red, blue = img[k, 0][hit].mean(), img[k, 2][hit].mean()
        assert (red > blue) == redder


def test_exact_esp_matches_pyscf_cubegen(water, tmp_path):
    from pyscf.tools import cubegen

    mol = water.to_pyscf()
    ref = cubegen.mep(mol, str(tmp_path / "mep.cube"), water.dm, nx=4, ny=4, nz=4)
    pts = cubegen.Cube(mol, 4, 4, 4).get_coords() * BOHR
    ours = esp_exact(mol, water.dm, pts)
    assert np.max(np.abs(ours - ref.ravel())) < 1e-6


def test_exact_esp_far_field_is_dipole_potential(water):
    mol = water.to_pyscf()
    mu = np.asarray(water.to_pyscf().atom_charges() @ mol.atom_coords())  # nuclear part
    from pyscf import scf

    mu = mu - np.einsum("xij,ji->x", mol.intor("int1e_r"), water.dm)  # dipole (a.u.) about the origin
    d = mu / np.linalg.norm(mu)
    r = 60.0  # bohr
    v = esp_exact(mol, water.dm, (r * d * BOHR)[None])[0]
    assert abs(v - np.linalg.norm(mu) / r ** 2) / (np.linalg.norm(mu) / r ** 2) < 0.05
    del scf


def test_point_cloud_fps(water):
    pc = ed_point_cloud(water, threshold=1e-3, n_points=256, seed=0)
    assert pc.shape == (256, 4) and pc.dtype == np.float32
    assert len(np.unique(pc[:, :3], axis=0)) == 256
    assert np.array_equal(pc, ed_point_cloud(water, n_points=256, seed=0))
    assert pc[:, 3].min() >= 1e-3 * (1 - 1e-3)
    cube = np.asarray(water.cube, np.float32)
    allpts = water.origin + water.spacing * np.argwhere(cube >= 1e-3)

    def coverage(n):
        s = allpts[farthest_point_sampling(allpts, n, seed=0)]
        d = np.min(np.linalg.norm(allpts[:, None] - s[None], axis=-1), axis=1)
        return d.max()

    assert coverage(32) > coverage(128) > coverage(512)


def test_renderer_and_point_cloud_bad_inputs(water):
    with pytest.raises(ValueError, match="isovalues"):
        render_multishot(water, isovalues=(0.0,))
    with pytest.raises(ValueError, match="isovalues"):
        render_multishot(water, isovalues=(-0.05,))
    with pytest.raises(ValueError, match="n_points"):
        ed_point_cloud(water, n_points=10 ** 7)
    with pytest.raises(ValueError, match="esp"):
        render_multishot(water, esp="bogus")


def test_cross_scale_and_rotations_shapes(water):
    img = render_multishot(water, size=16, isovalues=(0.002, 0.05))
    assert img.shape == (12, 4, 16, 16) and img.dtype == np.uint8
    # the vdW-like 0.002 surface is larger than the 0.05 one
    assert (img[:6, 3] > 0).sum() > (img[6:, 3] > 0).sum()
    rot = render_multishot(water, size=16, rotations=np.stack([np.eye(3), np.eye(3)]))
    assert rot.shape == (12, 4, 16, 16) and np.array_equal(rot[:6], rot[6:])


def test_shared_volume_equals_per_camera_sampling(tiny):
    from icml26.visioned.render import _CAMERAS, _cast

    rec = tiny["C=C"]
    size, fov = 24, 12.0
    g = (np.arange(size) + 0.5 - size / 2) * fov / size
    cube = np.asarray(rec.cube, np.float32)
    slow = np.stack([_cast(rec, cube, np.eye(3), *_CAMERAS[v], g, g, 0.05, "charges", (-0.08, 0.08), True, 0.35,
                           None) for v in range(6)])
    assert np.array_equal(render_multishot(rec, size=size, fov=fov), slow)
