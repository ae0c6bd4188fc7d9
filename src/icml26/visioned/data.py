"""Molecules for the CPU reproduction (spec §6) and the splits.

`enumerate_small_molecules` builds the spec's deterministic core x substituent library with RDKit: cores benzene
(mono; ortho/meta/para di), pyridine (2-, 3-, 4-), pyrimidine (2-), furan (2-), thiophene (2-), pyrrole (2- and
2,5-; the spec's parenthesis read as applying to pyrrole only, as it does for benzene and pyridine), ethene
(mono, 1,2-di), butadiene (1-), hexatriene (1-), cyclohexane (mono), propane (1-), each open position taking one
of 15 substituents (H, F, Cl, OH, NH2, CH3, CHO, CN, NO2, COOH, OCH3, N(CH3)2, CF3, C#CH, CH=CH2). Canonical
SMILES deduplicate, then closed-shell molecules with <= `max_heavy_atoms` heavy atoms are kept (702 unique, 332
with <= 8 heavy atoms, 8 Murcko scaffolds; the spec's probe counted 773 / 344 with a slightly different site
list that it does not spell out). [ours] the exact positions per core are the spec's list; the double-bond
geometry of 1,2-disubstituted ethenes is left unspecified (ETKDG picks one, deterministically for a seed).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from icml26.common.validation import check_array, check_int, check_seed

__all__ = [
    "SUBSTITUENTS",
    "CORES",
    "enumerate_small_molecules",
    "stratified_sample",
    "random_split",
    "scaffold_split",
    "murcko_scaffold",
    "ring_class",
]

# substituent name -> SMILES written from the attachment atom ("" = hydrogen, i.e. no branch)
SUBSTITUENTS: dict[str, str] = {
    "H": "", "F": "F", "Cl": "Cl", "OH": "O", "NH2": "N", "CH3": "C", "CHO": "C=O", "CN": "C#N",
    "NO2": "[N+](=O)[O-]", "COOH": "C(=O)O", "OCH3": "OC", "N(CH3)2": "N(C)C", "CF3": "C(F)(F)F",
    "C#CH": "C#C", "CH=CH2": "C=C",
}

# core name -> SMILES template with {0}, {1} for the substituted positions (branches)
CORES: dict[str, str] = {
    "benzene-1": "c1ccc{0}cc1",
    "benzene-1,2": "c1ccc{0}c{1}c1",
    "benzene-1,3": "c1cc{0}cc{1}c1",
    "benzene-1,4": "c1cc{0}ccc1{1}",
    "pyridine-2": "n1c{0}cccc1",
    "pyridine-3": "n1cc{0}ccc1",
    "pyridine-4": "n1ccc{0}cc1",
    "pyrimidine-2": "n1c{0}nccc1",
    "furan-2": "o1c{0}ccc1",
    "thiophene-2": "s1c{0}ccc1",
    "pyrrole-2": "[nH]1c{0}ccc1",
    "pyrrole-2,5": "[nH]1c{0}ccc1{1}",
    "ethene-1": "C=C{0}",
    "ethene-1,2": "C{1}=C{0}",
    "butadiene-1": "C=CC=C{0}",
    "hexatriene-1": "C=CC=CC=C{0}",
    "cyclohexane-1": "C1CCCCC1{0}",
    "propane-1": "CCC{0}",
}


def _core_family(core: str) -> str:
    return core.split("-")[0]


def ring_class(core: str) -> str:
    """'6ring' | '5ring' | 'acyclic' for a core name (used by the OOD split: train 6-ring + acyclic)."""
    fam = _core_family(core)
    if fam in ("furan", "thiophene", "pyrrole"):
        return "5ring"
    if fam in ("benzene", "pyridine", "pyrimidine", "cyclohexane"):
        return "6ring"
    return "acyclic"


def enumerate_small_molecules(max_heavy_atoms: int = 8) -> list[dict]:
    """All unique core x substituent molecules with <= `max_heavy_atoms` heavy atoms, sorted by SMILES.

    Returns a list of dicts {"smiles": canonical SMILES, "core": core family name, "n_heavy": int}; a
    molecule reachable from several cores keeps the first core in `CORES` order. Deterministic.
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    max_heavy_atoms = check_int(max_heavy_atoms, "max_heavy_atoms", min=1)
    seen: dict[str, dict] = {}
    subs = list(SUBSTITUENTS.values())
    for core, tpl in CORES.items():
        n_sites = tpl.count("{")
        for combo in itertools.product(subs, repeat=n_sites):
            smi = tpl.format(*[f"({s})" if s else "" for s in combo])
            mol = Chem.MolFromSmiles(smi)
            if mol is None:
                continue
            can = Chem.MolToSmiles(mol)
            if can in seen:
                continue
            n_rad = sum(a.GetNumRadicalElectrons() for a in mol.GetAtoms())
            n_el = sum(a.GetAtomicNum() for a in Chem.AddHs(mol).GetAtoms()) - Chem.GetFormalCharge(mol)
            if n_rad or n_el % 2:
                continue
            seen[can] = {"smiles": can, "core": _core_family(core), "core_site": core,
                         "n_heavy": mol.GetNumHeavyAtoms()}
    out = [m for m in seen.values() if m["n_heavy"] <= max_heavy_atoms]
    return sorted(out, key=lambda m: m["smiles"])


def stratified_sample(mols: Sequence[dict], n: int, seed: int = 0, key: str = "core") -> list[dict]:
    """A seeded sample of `n` molecules, allocated over the groups `m[key]` proportionally (largest remainder).

    Raises ValueError if `n` exceeds the number of molecules.
    """
    mols = list(mols)
    n = check_int(n, "n", min=1, max=len(mols))
    rng = np.random.default_rng(check_seed(seed))
    groups: dict[str, list[dict]] = {}
    for m in mols:
        groups.setdefault(m[key], []).append(m)
    names = sorted(groups)
    quota = np.array([len(groups[g]) for g in names], float) * n / len(mols)
    take = np.floor(quota).astype(int)
    for i in np.argsort(-(quota - take), kind="stable")[: n - take.sum()]:
        take[i] += 1
    out = []
    for g, k in zip(names, take):
        idx = rng.permutation(len(groups[g]))[:k]
        out.extend(groups[g][i] for i in sorted(idx))
    return sorted(out, key=lambda m: m["smiles"])


def random_split(n: int, fractions: Sequence[float] = (0.7, 0.15, 0.15), seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random train/val/test index arrays for `n` items (fractions must sum to 1)."""
    n = check_int(n, "n", min=1)
    fr = check_array(fractions, "fractions", shape=(3,))
    if abs(fr.sum() - 1) > 1e-6 or fr.min() < 0:
        raise ValueError(f"fractions must be 3 non-negative numbers summing to 1, got {tuple(fr.tolist())}")
    fractions = tuple(fr.tolist())
    perm = np.random.default_rng(check_seed(seed)).permutation(n)
    n_tr = int(round(fractions[0] * n))
    n_va = int(round(fractions[1] * n))
    return np.sort(perm[:n_tr]), np.sort(perm[n_tr:n_tr + n_va]), np.sort(perm[n_tr + n_va:])


def murcko_scaffold(smiles: str) -> str:
    """Bemis-Murcko scaffold SMILES ('' for acyclic molecules)."""
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) and smiles else None
    if mol is None:
        raise ValueError(f"smiles: RDKit cannot parse {smiles!r}")
    return MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=False)


def scaffold_split(smiles: Sequence[str], fractions: Sequence[float] = (0.7, 0.15, 0.15)
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic scaffold split (chemprop style): scaffold groups, largest first, fill train, val, test."""
    if isinstance(smiles, str):
        raise TypeError("smiles must be a list of SMILES strings, not one string")
    smiles = list(smiles)
    fr = check_array(fractions, "fractions", shape=(3,))
    if abs(fr.sum() - 1) > 1e-6 or fr.min() < 0:
        raise ValueError(f"fractions must be 3 non-negative numbers summing to 1, got {tuple(fr.tolist())}")
    fractions = tuple(fr.tolist())
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(smiles):
        groups.setdefault(murcko_scaffold(s), []).append(i)
    order = sorted(groups.values(), key=lambda g: (-len(g), g[0]))
    n = len(smiles)
    tr, va, te = [], [], []
    for g in order:
        if len(tr) + len(g) <= fractions[0] * n:
            tr += g
        elif len(va) + len(g) <= fractions[1] * n:
            va += g
        else:
            te += g
    return np.array(sorted(tr), int), np.array(sorted(va), int), np.array(sorted(te), int)
