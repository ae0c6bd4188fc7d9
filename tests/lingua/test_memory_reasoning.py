"""Correctness tests of spec section 8: EU, Beta, verifier, merging, mining, refinement, reflection, tracker."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from scipy.stats import beta as beta_dist

from icml26.lingua import (ActionVerifier, ContrastiveRefiner, EpisodicEntry, EpisodicMemory, ExpectedUtilityRanker,
                           HashingEmbedder, ProceduralMemory, ReflectionMonitor, ReliabilityTracker, RuleBasedSRL,
                           Script, SemanticMemory)
from icml26.lingua.memory import average_linkage_labels, beta_entropy
from icml26.lingua.reasoning import frequency_discriminators, infer_goal_type, should_consolidate


class TableEmbedder:
    """Fixed unit vectors per text (unknown texts: zero)."""

    def __init__(self, table):
        self.table = {k: np.asarray(v, float) / np.linalg.norm(v) for k, v in table.items()}

    def encode(self, texts):
        return np.stack([self.table.get(t, np.zeros(2)) for t in texts]) if texts else np.zeros((0, 2))


def script(pre=(), post=(), durations=None, sid="s1", goal=""):
    return Script(sid, "open fridge", goal, list(pre), ["open fridge"], list(post), durations or {}, 5)


def test_expected_utility_known_answer():
    # Rel 0.5 (one mention predicate holds, one fails), alpha=3, beta=1, Risk 0.1, lambda 0.1
    s = script(pre=["requires_mention(fridge)", "NOT_mention(fridge)"])
    s.name = "S"
    emb = TableEmbedder({s.text: [1.0, 0.0], "failure": [0.1, math.sqrt(0.99)], "the fridge": [0.0, 1.0]})
    tr = ReliabilityTracker()
    for ok in (True, True):
        tr.update("s1", ok)
    assert tr.get("s1") == (3.0, 1.0)
    eu, parts = ExpectedUtilityRanker(emb, 0.1).utility(s, tr, ["the fridge"], ["failure"])
    assert parts["rel"] == pytest.approx(0.5)
    assert parts["risk"] == pytest.approx(0.1)
    assert beta_dist(3, 1).entropy() == pytest.approx(-0.431946, abs=1e-6)
    assert eu == pytest.approx(0.5 * 0.75 - 0.1 + 0.1 * -0.431946, abs=1e-6)
    assert eu == pytest.approx(0.231805, abs=1e-6)


def test_relevance_and_ranking_prefer_matching_script():
    emb = HashingEmbedder()
    r = ExpectedUtilityRanker(emb)
    fridge = script(["HasAffordance(fridge, open)"], sid="fridge")
    oven = script(["HasAffordance(oven, open)"], sid="oven")
    ranked = r.rank([oven, fridge], ReliabilityTracker(), ["the person opens the fridge"])
    assert [s.script_id for s, _, _ in ranked] == ["fridge", "oven"]
    assert r.relevance(fridge, []) == 0.0 and r.relevance(script([]), ["x"]) == 0.0


def test_beta_posterior_and_entropy():
    tr = ReliabilityTracker()
    for n in range(6):
        assert tr.expected("a") == pytest.approx((n + 1) / (n + 2))
        tr.update("a", True)
    assert beta_entropy(1.0, 1.0) == pytest.approx(0.0, abs=1e-12)
    for a, b in [(2, 1), (1, 3), (5, 5), (1.5, 1.0), (10, 2)]:
        assert beta_entropy(a, b) < 0
    tr.frozen = True
    tr.update("a", False)
    assert tr.get("a") == (7.0, 1.0)
    with pytest.raises(TypeError, match="success"):
        tr.update("a", 1)


def test_tracker_save_load(tmp_path):
    tr = ReliabilityTracker()
    tr.update("x", True)
    tr.update("y", False)
    tr.save(tmp_path / "r.json")
    back = ReliabilityTracker.load(tmp_path / "r.json")
    assert back.get("x") == (2.0, 1.0) and back.get("y") == (1.0, 2.0) and back.get("z") == (1.0, 1.0)
    (tmp_path / "bad.json").write_text('{"params": {"x": [0, 1]}}')
    with pytest.raises(ValueError, match="positive"):
        ReliabilityTracker.load(tmp_path / "bad.json")


def test_verifier_special_cases():
    v = ActionVerifier(HashingEmbedder())
    assert v.postcondition_coverage([], ["anything"]) == 1.0
    assert v.postcondition_coverage(["open(fridge) completed"], []) == 0.0
    assert v.postcondition_coverage(["open(fridge) completed", "close(oven) completed"],
                                    ["open(fridge) completed"]) == 0.5
    assert v.temporal_consistency([], []) == 1.0
    assert v.temporal_consistency([3.0, 5.0], [None, None]) == 1.0
    # exactly at mu +- 2 sigma counts as consistent
    assert v.temporal_consistency([1.0, 5.0, 5.01], [(3.0, 1.0)] * 3) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="equal length"):
        v.temporal_consistency([1.0], [])


def test_verify_grounding_thresholds():
    v = ActionVerifier(HashingEmbedder())
    s = script(post=["open(fridge) completed"], durations={"open fridge": (2.0, 0.5)})
    ev = EpisodicEntry("person", "open", "fridge", 10.0, 12.0, outcome="open(fridge) completed")
    g = v.verify(s, ev, [ev])
    assert g.grounded and g.post_coverage == 1.0 and g.temporal_consistency == 1.0 and g.span == (10.0, 12.0)
    far = EpisodicEntry("person", "open", "fridge", 40.0, 49.0, outcome="open(fridge) completed")
    g2 = v.verify(s, far, [far])
    assert g2.post_coverage == 1.0 and g2.temporal_consistency == 0.0 and not g2.grounded


def _pair(gap=0.5, second="then the person opens the fridge", first="the person opens the fridge"):
    a = EpisodicEntry("person", "open", "fridge", 0.0, 1.0, description=first)
    b = EpisodicEntry("person", "open", "fridge", 1.0 + gap, 2.0 + gap, description=second)
    return a, b


@pytest.mark.parametrize("case, merges", [("all", True), ("gap", False), ("similar", False), ("marker", False)])
def test_merge_needs_all_three_conditions(case, merges):
    kw = {"all": {}, "gap": {"gap": 2.0}, "similar": {"second": "then someone cuts the tomato"},
          "marker": {"second": "the person opens the fridge"}}[case]
    m = EpisodicMemory(HashingEmbedder())
    a, b = _pair(**kw)
    m.add(a)
    m.add(b)
    assert m.merge() == int(merges)
    assert len(m) == (1 if merges else 2)
    if merges:
        e = m.entries[0]
        assert (e.t_s, e.t_e) == (0.0, 2.5) and "then" in e.description


def test_merge_gap_boundary_is_strict():
    m = EpisodicMemory(HashingEmbedder(), merge_gap_s=2.0)
    a, b = _pair(gap=1.999)
    m.add(a)
    m.add(b)
    assert m.merge() == 1
    m = EpisodicMemory(HashingEmbedder(), merge_gap_s=2.0)
    a, b = _pair(gap=2.0)
    m.add(a)
    m.add(b)
    assert m.merge() == 0


def _episodes(n, durs=None, obj="fridge", action="open", goal=""):
    durs = durs if durs is not None else [2.0] * n
    return [EpisodicEntry("person", action, obj, 10.0 * i, 10.0 * i + d, objects=[obj], goal=goal,
                          outcome=f"{action}({obj}) completed", video=f"v{i}") for i, d in enumerate(durs)]


def test_mining_instance_count_and_cv():
    pm = ProceduralMemory(HashingEmbedder(), n_min=5, max_cv=0.5)
    assert pm.mine(episodes=_episodes(4)) == []
    mu, cv06, cv04 = 3.0, 0.6, 0.4
    high = [mu - cv06 * mu, mu + cv06 * mu] * 2 + [mu]  # std/mean = 0.6 * sqrt(4/5)... adjust below
    high = np.array(high)
    high = mu + (high - high.mean()) * (cv06 * mu / high.std())
    low = mu + (high - mu) * (cv04 / cv06)
    assert high.std() / high.mean() == pytest.approx(0.6)
    assert pm.mine(episodes=_episodes(5, list(high))) == []
    got = pm.mine(episodes=_episodes(5, list(low)))
    assert len(got) == 1 and got[0].cv == pytest.approx(0.4) and got[0].instance_count == 5


def test_mined_script_schema_and_goal():
    sem = SemanticMemory(HashingEmbedder())
    eps = _episodes(6, goal="to chill a beverage") + _episodes(6, obj="oven")
    sem.consolidate(eps)
    pm = ProceduralMemory(HashingEmbedder(), n_min=5)
    scripts = {s.script_id: s for s in pm.mine(sem, episodes=eps)}
    assert set(scripts) == {"open_fridge", "open_oven"}  # objects discriminate the shared verb
    f = scripts["open_fridge"]
    assert "requires_goal(to chill a beverage)" in f.preconditions
    assert "HasAffordance(fridge, open)" in f.preconditions
    assert f.postconditions == ["open(fridge) completed"] and f.durations["open fridge"] == (2.0, 0.0)
    assert scripts["open_oven"].goal == ""


def test_max_clusters_rule_merges_what_the_distance_cut_separates():
    sem = SemanticMemory(HashingEmbedder())
    eps = _episodes(6, obj="fridge") + _episodes(6, obj="oven")
    sem.consolidate(eps)
    one = ProceduralMemory(HashingEmbedder(), n_min=5, max_clusters=1).mine(sem, episodes=eps)
    assert len(one) == 1 and one[0].instance_count == 12


def test_average_linkage_with_multiplicities_equals_scipy():
    rng = np.random.default_rng(0)
    pts = rng.random((7, 3))
    sizes = np.array([1, 3, 2, 1, 4, 1, 2])
    full = np.repeat(pts, sizes, axis=0)
    D = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    Z = linkage(full, method="average")
    for cut in (0.2, 0.35, 0.5, 0.8):
        ref = fcluster(Z, t=cut, criterion="distance")
        ours = np.repeat(average_linkage_labels(D, sizes, cut=cut), sizes)
        # same partition (labels may differ)
        assert len(set(zip(ref, ours))) == len(set(ref)) == len(set(ours))
    ref3 = fcluster(Z, t=3, criterion="maxclust")
    ours3 = np.repeat(average_linkage_labels(D, sizes, n_clusters=3), sizes)
    assert len(set(zip(ref3, ours3))) == len(set(ref3)) == 3
    full_D = squareform(np.sqrt(((full[:, None] - full[None]) ** 2).sum(-1)), checks=False)
    assert np.allclose(linkage(full_D, "average")[:, 2], Z[:, 2])
    with pytest.raises(ValueError, match="exactly one"):
        average_linkage_labels(D, sizes)


def test_contrastive_refinement_versioning():
    pm = ProceduralMemory(HashingEmbedder(), n_min=2)
    pm.mine(episodes=_episodes(3))
    tr = ReliabilityTracker()
    for ok in (True, True, False):
        tr.update("open_fridge", ok)
    ref = ContrastiveRefiner(n_contrast=3)
    for i in range(3):
        ref.add("open_fridge", "the person opens the fridge slowly", True)
        ref.add("open_fridge", "the person opens the oven quickly", False)
        if i < 2:
            assert not ref.can_refine("open_fridge")
    assert ref.refine(pm, tr, "open_fridge") is not None
    child = pm.scripts["open_fridge_v2"]
    assert child.version == 2 and child.parent_id == "open_fridge" and not pm.scripts["open_fridge"].active
    assert "requires_mention(fridge)" in child.preconditions and "NOT_mention(oven)" in child.preconditions
    assert tr.get("open_fridge_v2") == tr.get("open_fridge") == (3.0, 2.0)
    assert pm.heads["open_fridge"] == "open_fridge_v2"
    # a later mining updates the latest version in place and keeps its predicates
    pm.mine(episodes=_episodes(4))
    assert pm.scripts["open_fridge_v2"].instance_count == 4 and pm.scripts["open_fridge_v2"].refinements


def test_refinement_needs_three_of_each():
    ref = ContrastiveRefiner(n_contrast=3)
    for _ in range(5):
        ref.add("s", "fridge fridge", True)
    ref.add("s", "oven", False)
    ref.add("s", "oven", False)
    assert not ref.can_refine("s")
    ref.add("s", "oven", False)
    assert ref.can_refine("s")


def test_frequency_discriminators():
    pos, neg = frequency_discriminators(["open the fridge door", "fridge door open"], ["open the oven"])
    assert "fridge" in pos and "door" in pos and "open" not in pos and "oven" in neg


def test_mention_predicates_in_relevance():
    r = ExpectedUtilityRanker(HashingEmbedder())
    s = script(["requires_mention(fridge)", "NOT_mention(oven)"])
    assert r.relevance(s, ["the person opens the fridge"]) == 1.0
    assert r.relevance(s, ["the person opens the oven"]) == 0.0


def test_reflection_triggers_each_separately():
    emb = HashingEmbedder()
    m = ReflectionMonitor(emb)
    for _ in range(3):
        m.add("open fridge", 0.9, False)
    assert m.triggers() == ["failures"]
    m.reset()
    for ok in (True, False, True):
        m.add("open fridge", 0.1, ok)
    assert m.triggers() == ["low_coverage"]
    m.reset()
    for h in ("open fridge", "cut tomato", "water plant"):
        m.add(h, 0.9, True)
    assert m.triggers() == ["drift"]
    m.reset()
    for _ in range(3):
        m.add("open fridge", 0.9, True)
    assert m.triggers() == [] and not m.should_reflect()
    m.reset()
    m.add("x", 0.0, False)
    assert m.triggers() == []  # fewer than 3 decisions


def test_consolidation_rule_and_goal_taxonomy():
    assert should_consolidate(True, 0.7, 0.4) and not should_consolidate(False, 0.9, 0.9)
    assert not should_consolidate(True, 0.6, 0.9) and not should_consolidate(True, 0.9, 0.3)
    assert infer_goal_type("Why did the person open the fridge?") == "identify_causal_event"
    assert infer_goal_type("What did the person do after opening the oven?") == "verify_temporal_sequence"
    assert infer_goal_type("Who opened it?") == "identify_agent"
    assert infer_goal_type("Where is the cup?") == "locate_object"
    assert infer_goal_type("What did the person cut?") == "general_qa"


def test_srl_roles(world):
    srl = RuleBasedSRL(world.lexicon)
    r = srl.parse("then someone pulls open the fridge")
    assert (r["Agent"], r["Action"], r["Patient"], r["marker"]) == ("someone", "open", "fridge", True)
    r = srl.parse("the person places the cup on the rack")
    assert (r["Action"], r["Patient"], r["Location"]) == ("put", "cup", "rack")
    r = RuleBasedSRL().parse("a man slices bread to make a sandwich")
    assert r["Action"] == "slic" and r["Patient"] == "bread" and r["Goal"] == "make a sandwich"


def test_semantic_memory_consolidation_and_fuzzy():
    sem = SemanticMemory(HashingEmbedder(), gamma_aff=0.75)
    eps = _episodes(3, action="open") + _episodes(1, action="close")
    assert sem.consolidate(eps[:2]) == 0  # seen twice: below 3 episodes
    assert sem.consolidate(eps) == 1
    assert [a.name for a in sem.entries["fridge"].affordances] == ["open", "close"]
    assert [e.obj for e in sem.retrieve_fuzzy("fridges")] == ["fridge"]
    assert sem.retrieve_fuzzy("tomato") == []
