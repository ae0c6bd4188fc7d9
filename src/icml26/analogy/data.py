"""The synthetic worlds of the reproduction (spec section 2): analogy premises and two-hop chains.

Every statement is a short sentence `subject relation [relation] -> object`; a `Premise` holds the input token ids
and the target token id. Token ids are laid out by kind and then shuffled by the world's `seed`, so two seeds give
the same world up to a relabelling of tokens (`layout` maps a token's name, e.g. `("entity", g, j)`, to its id).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.common.validation import check_bool, check_int

__all__ = ["Premise", "AnalogyWorld", "TwoHopWorld"]

_MAX_SIZE = 100_000  # per-argument bound: larger sizes are refused, not silently enumerated for hours
_MAX_VOCAB = 2_000_000


@dataclass(frozen=True)
class Premise:
    """One sentence: `inputs` (token ids, the last one is the relation) and the `target` token id."""

    inputs: tuple[int, ...]
    target: int


class _World:
    """Token bookkeeping shared by both worlds."""

    def __init__(self, names: list[tuple], seed: int) -> None:
        perm = np.random.default_rng(seed).permutation(len(names))
        self.layout: dict[tuple, int] = {name: int(perm[i]) for i, name in enumerate(names)}
        self.names: dict[int, tuple] = {v: k for k, v in self.layout.items()}
        self.vocab_size = len(names)

    def tok(self, *name) -> int:
        """Token id of a named token, e.g. `world.tok("entity", 0, 1)` or `world.tok("IS")`."""
        return self.layout[tuple(name)]

    def _ids(self, kind: str) -> np.ndarray:
        return np.array(sorted(v for k, v in self.layout.items() if k[0] == kind), dtype=np.int64)


class AnalogyWorld(_World):
    """Groups of entities that share features; each group's source entity (index 0) holds the group's attribute.

    Args:
        n_groups: G >= 2 groups (default 8).
        group_size: kappa >= 2 entities per group (default 4); entities 1..kappa-1 are the test entities.
        n_features: shared features per group (default 1), premises `(e, HAS) -> f_{g,k}` for every entity.
        n_individual: entity-specific facts per entity (default 3), `(e, ID) -> v_{e,j}` with unique value tokens.
        seed: shuffles the token ids (the world is the same up to relabelling).

    Attributes:
        similarity (S), attribution (A), individual (I), test: lists of `Premise`.
        vocab_size: V = G*kappa + G*n_features + G + G*kappa*n_individual + 3 relation tokens.
        answer_sets: relation token id -> sorted token ids of its answer type (HAS -> features, IS -> attributes,
            ID -> individual values).
        attr_tokens: the G attribute token ids, in group order. groups: (G, kappa) array of entity ids.
    """

    def __init__(self, n_groups: int = 8, group_size: int = 4, n_features: int = 1, n_individual: int = 3,
                 seed: int = 0) -> None:
        G = check_int(n_groups, "n_groups", min=2, max=_MAX_SIZE)
        k = check_int(group_size, "group_size", min=2, max=_MAX_SIZE)  # a group needs a target besides its source
        F = check_int(n_features, "n_features", min=1, max=_MAX_SIZE)
        n_ind = check_int(n_individual, "n_individual", min=0, max=_MAX_SIZE)
        if G * k * (1 + n_ind) + G * (F + 1) > _MAX_VOCAB:
            raise ValueError(f"n_groups * group_size * (1 + n_individual) + n_groups * (n_features + 1) must be <= "
                             f"{_MAX_VOCAB} tokens, got {G * k * (1 + n_ind) + G * (F + 1)}")
        self.seed = check_int(seed, "seed", min=0, max=2**63 - 1)
        self.n_groups, self.group_size, self.n_features, self.n_individual = G, k, F, n_ind
        names: list[tuple] = [("entity", g, j) for g in range(G) for j in range(k)]
        names += [("feature", g, f) for g in range(G) for f in range(F)]
        names += [("attribute", g) for g in range(G)]
        names += [("value", g, j, m) for g in range(G) for j in range(k) for m in range(n_ind)]
        names += [("HAS",), ("IS",), ("ID",)]
        super().__init__(names, self.seed)
        t = self.tok
        self.HAS, self.IS, self.ID = t("HAS"), t("IS"), t("ID")
        self.groups = np.array([[t("entity", g, j) for j in range(k)] for g in range(G)], dtype=np.int64)
        self.attr_tokens = np.array([t("attribute", g) for g in range(G)], dtype=np.int64)
        self.similarity = [Premise((t("entity", g, j), self.HAS), t("feature", g, f))
                           for g in range(G) for j in range(k) for f in range(F)]
        self.attribution = [Premise((t("entity", g, 0), self.IS), t("attribute", g)) for g in range(G)]
        self.individual = [Premise((t("entity", g, j), self.ID), t("value", g, j, m))
                           for g in range(G) for j in range(k) for m in range(n_ind)]
        self.test = [Premise((t("entity", g, j), self.IS), t("attribute", g)) for g in range(G) for j in range(1, k)]
        self.answer_sets: dict[int, np.ndarray] = {self.HAS: self._ids("feature"), self.IS: self._ids("attribute")}
        if n_ind:
            self.answer_sets[self.ID] = self._ids("value")

    @property
    def premises(self) -> list[Premise]:
        """All training premises, S + A + I."""
        return self.similarity + self.attribution + self.individual

    def __repr__(self) -> str:
        return (f"AnalogyWorld(n_groups={self.n_groups}, group_size={self.group_size}, n_features={self.n_features}, "
                f"n_individual={self.n_individual}, seed={self.seed})")


class TwoHopWorld(_World):
    """n chains a_i ->R1 b_i ->R2 c_i over disjoint entity sets A, B, C; optional identity bridges `(b_i, EQ) -> b_i`.

    Args:
        n_chains: n >= 2 (default 16). bridge: add the identity facts (default True).
        n_individual: entity-specific facts per entity (default 0), `(e, ID) -> v_{e,m}`.
        seed: shuffles the token ids.

    Attributes:
        facts: training premises (R1 facts, R2 facts, bridges, individual facts).
        test_composed: `(a_i, R1, R2) -> c_i`; test_analogical: `(a_i, R2) -> c_i`.
        answer_sets: R1 -> B, R2 -> C, EQ -> A u B u C, ID -> values. c_tokens: the C entities in chain order.
    """

    def __init__(self, n_chains: int = 16, bridge: bool = True, n_individual: int = 0, seed: int = 0) -> None:
        n = check_int(n_chains, "n_chains", min=2, max=_MAX_SIZE)
        self.bridge = check_bool(bridge, "bridge")
        n_ind = check_int(n_individual, "n_individual", min=0, max=_MAX_SIZE)
        if 3 * n * (1 + n_ind) > _MAX_VOCAB:
            raise ValueError(f"3 * n_chains * (1 + n_individual) must be <= {_MAX_VOCAB} tokens, "
                             f"got {3 * n * (1 + n_ind)}")
        self.seed = check_int(seed, "seed", min=0, max=2**63 - 1)
        self.n_chains, self.n_individual = n, n_ind
        names: list[tuple] = [(s, i) for s in ("a", "b", "c") for i in range(n)]
        names += [("value", s, i, m) for s in ("a", "b", "c") for i in range(n) for m in range(n_ind)]
        names += [("R1",), ("R2",), ("EQ",), ("ID",)]
        super().__init__(names, self.seed)
        t = self.tok
        self.R1, self.R2, self.EQ, self.ID = t("R1"), t("R2"), t("EQ"), t("ID")
        self.facts = [Premise((t("a", i), self.R1), t("b", i)) for i in range(n)]
        self.facts += [Premise((t("b", i), self.R2), t("c", i)) for i in range(n)]
        if self.bridge:
            self.facts += [Premise((t("b", i), self.EQ), t("b", i)) for i in range(n)]
        self.facts += [Premise((t(s, i), self.ID), t("value", s, i, m))
                       for s in ("a", "b", "c") for i in range(n) for m in range(n_ind)]
        self.test_composed = [Premise((t("a", i), self.R1, self.R2), t("c", i)) for i in range(n)]
        self.test_analogical = [Premise((t("a", i), self.R2), t("c", i)) for i in range(n)]
        ents = lambda s: np.array(sorted(t(s, i) for i in range(n)), dtype=np.int64)  # noqa: E731
        self.c_tokens = np.array([t("c", i) for i in range(n)], dtype=np.int64)
        self.answer_sets = {self.R1: ents("b"), self.R2: ents("c"),
                            self.EQ: np.sort(np.concatenate([ents("a"), ents("b"), ents("c")]))}
        if n_ind:
            self.answer_sets[self.ID] = self._ids("value")

    def __repr__(self) -> str:
        return (f"TwoHopWorld(n_chains={self.n_chains}, bridge={self.bridge}, n_individual={self.n_individual}, "
                f"seed={self.seed})")
