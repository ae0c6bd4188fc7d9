"""Build `runs/report.md` and a self-contained `runs/report.html` (figures embedded) from saved results only.

Every paper of the registry appears, with its status (not implemented, not run, smoke only, small, medium,
paper, unreadable) and its gate counts "held h · not held n · inconclusive i". Each claim is shown as
paper | ours | threshold | verdict: "ours" leads with the headline estimate and its interval, the other measured
fields below it; verdicts come in three colours (held, not held, inconclusive); sanity claims (hold by
construction, or check plumbing) sit in their own block and never count. Per result a forest plot shows each gate's
estimate and interval as a signed distance to its threshold, so a reader sees which verdicts are far from their bar
and which are a coin flip. Smoke results are bannered as plumbing checks and their verdicts greyed; runs with
`--seed`/`--set` overrides are marked as such; a result made by code that has changed since is marked stale.

`update_readme` writes the README's papers table (between `<!-- papers-table -->` markers) from the saved small
results, so the README never drifts from the code's own numbers.
"""

from __future__ import annotations

import base64
import html
import json
import platform
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from icml26.registry import PAPERS, Paper
from icml26.common.stats import MEASURED
from icml26.results import SCALES, Claim, Result, atomic_write_bytes, load_result

SCALE_ORDER = ("small", "medium", "paper", "smoke")


@dataclass
class Entry:
    """One saved result folder: `<root>/<slug>/<scale>[+<overrides>]`."""

    slug: str
    scale: str
    folder: Path
    result: Result | None
    problem: str = ""  # "unreadable: reason" when the file cannot be loaded
    stale: bool = False

    @property
    def is_override(self) -> bool:
        return "+" in self.folder.name

    @property
    def anchor(self) -> str:
        return f"{self.slug}-{self.folder.name}".replace("+", "-").replace("=", "-").replace(",", "-")


def _reason(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg} at line {e.lineno})"
    return str(e).splitlines()[0][:160] if str(e) else type(e).__name__


def _folder_scale(name: str) -> str | None:
    base = name.split("+", 1)[0]
    return base if base in SCALES else None


def collect_entries(root: str | Path) -> dict[str, list[Entry]]:
    """Saved results per slug (registry order, then unknown slugs): canonical scales first, then overrides."""
    root = Path(root)
    slugs = list(PAPERS)
    if root.is_dir():
        slugs += sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in PAPERS)
    out: dict[str, list[Entry]] = {}
    for slug in slugs:
        d = root / slug
        if not d.is_dir():
            continue
        folders = [f for f in d.iterdir() if f.is_dir() and _folder_scale(f.name) and (f / "result.json").exists()]
        folders.sort(key=lambda f: (f.name != _folder_scale(f.name), SCALE_ORDER.index(_folder_scale(f.name)),
                                    f.name))
        entries = []
        for f in folders:
            try:
                r = load_result(f)
                e = Entry(slug, _folder_scale(f.name), f, r)
                if slug in PAPERS and PAPERS[slug].is_implemented():
                    from icml26.provenance import is_stale

                    e.stale = is_stale(PAPERS[slug], r)
            except (OSError, ValueError) as err:
                e = Entry(slug, _folder_scale(f.name), f, None, f"unreadable: {_reason(err)}")
            entries.append(e)
        if entries:
            out[slug] = entries
    return out


def collect_results(root: str | Path) -> list[tuple[Path, Result]]:
    """Every readable canonical result, papers in registry order, scales small/paper/smoke."""
    return [(e.folder, e.result) for es in collect_entries(root).values() for e in es
            if e.result is not None and not e.is_override]


def paper_status(paper: Paper | None, entries: list[Entry]) -> str:
    """not implemented / not run / smoke only / small / paper / unreadable, from the canonical results."""
    canon = {e.scale: e for e in entries if not e.is_override}
    if paper is not None and not paper.is_implemented() and not canon:
        return "not implemented"
    for scale in ("small", "medium", "paper"):
        if scale in canon:
            e = canon[scale]
            return e.problem and f"{scale}: {e.problem}" or (scale + (" (stale)" if e.stale else ""))
    if "smoke" in canon:
        e = canon["smoke"]
        return f"smoke: {e.problem}" if e.problem else "smoke only (plumbing)"
    return "not run"


def format_measured(v, top: bool = True) -> str:
    """Measured values for a table cell: 4 significant digits; nested mappings in braces."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        if top:
            return "; ".join(f"{k}={format_measured(x, False)}" for k, x in v.items())
        return "{" + ", ".join(f"{k}: {format_measured(x, False)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(format_measured(x, False) for x in v) + "]"
    return str(v)


def format_estimate(c: Claim) -> str:
    """The headline number with its interval: "0.302 [0.244, 0.369] (95 % t, 3 seeds)"; exact values say so."""
    d = c.decision
    if d.parts:
        return "; ".join(f"{p.label or 'part'} {_est(p)}" for p in d.parts)
    return _est(d)


def _est(d) -> str:
    if d.estimate != d.estimate:  # NaN
        return "not measured"
    iv = d.interval
    if iv is None or iv.method == "exact":
        return f"{d.estimate:.4g} (exact)"
    lo = "-inf" if iv.low == float("-inf") else f"{iv.low:.4g}"
    hi = "inf" if iv.high == float("inf") else f"{iv.high:.4g}"
    return f"{d.estimate:.4g} [{lo}, {hi}] ({iv.level * 100:g} % {iv.method}, {iv.n} {iv.unit})"


def format_ours(c: Claim) -> str:
    """Our measurement: the headline estimate and its interval first, then the per-seed summary and the other
    measured values."""
    text = format_estimate(c)
    s = c.seed_summary
    if s is not None:
        mean, std, n = s
        text += f"; per seed {mean:.4g} ± {std:.2g} over {n} seed{'s' if n > 1 else ''}"
    rest = format_measured(c.measured)
    return f"{text}; {rest}" if rest else text


def _title(slug: str) -> tuple[str, str]:
    p = PAPERS.get(slug)
    return (p.title, p.arxiv) if p is not None else (slug, "n/a")


def measured_only(c: Claim) -> bool:
    """A reported number without a threshold (verdict "measured"): shown, never counted."""
    return c.verdict == MEASURED or (
        not c.gate and c.threshold.strip().lower().rstrip(".") in ("report only", "report-only"))


def verdict_text(c: Claim) -> str:
    return "measured" if measured_only(c) else c.verdict


def verdict_class(c: Claim) -> str:
    """CSS class of a verdict: held / nothold / inconclusive / grey (measured)."""
    if measured_only(c):
        return "grey"
    return {"held": "held", "not held": "nothold"}.get(c.verdict, "inconclusive")


def gate_counts(r: Result) -> dict[str, int]:
    """Gates only: {"held": h, "not held": n, "inconclusive": i}."""
    return r.counts()


def counts_text(r: Result) -> str:
    """ "held h · not held n · inconclusive i" over the gates (sanity and report claims never count)."""
    c = gate_counts(r)
    return f"held {c['held']} · not held {c['not held']} · inconclusive {c['inconclusive']}"


def _reported(r: Result) -> list[Claim]:
    return [c for c in r.claims if c.kind == "report"]


def _reported_text(r: Result) -> str:
    rep = [c for c in _reported(r) if not measured_only(c)]
    meas = len(_reported(r)) - len(rep)
    bits = [f"{sum(c.held for c in rep)}/{len(rep)} held"] if rep else []
    if meas:
        bits.append(f"{meas} measured")
    return ", ".join(bits)


def _main_entry(entries: list[Entry]) -> Entry | None:
    canon = [e for e in entries if not e.is_override]
    return canon[0] if canon else None


def summary_rows(root: str | Path) -> list[dict[str, str]]:
    """One row per registry paper (and any unknown slug with results): status, gate counts, reported, sanity,
    runtime."""
    entries = collect_entries(root)
    rows = []
    for slug in list(PAPERS) + [s for s in entries if s not in PAPERS]:
        es = entries.get(slug, [])
        main = _main_entry(es)
        row = {"slug": slug, "status": paper_status(PAPERS.get(slug), es), "gates": "", "reported": "",
               "sanity": "", "runtime": ""}
        if main is not None and main.result is not None:
            r = main.result
            san = [c for c in r.claims if c.kind == "sanity"]
            row.update(gates=counts_text(r), reported=_reported_text(r),
                       sanity=f"{sum(c.held for c in san)}/{len(san)}" if san else "",
                       runtime=f"{r.runtime_s:.0f} s")
        rows.append(row)
    return rows


def summary_markdown(root: str | Path) -> str:
    """The summary table: every paper with its status, gate verdict counts, reported and sanity claims, runtime."""
    lines = ["| paper | status | gates | reported | sanity checks | runtime |", "|---|---|---|---|---|---|"]
    for r in summary_rows(root):
        lines.append(f"| {r['slug']} | {r['status']} | {r['gates'] or '-'} | {r['reported'] or '-'} | "
                     f"{r['sanity'] or '-'} | {r['runtime'] or '-'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- forest plot
_COLOURS = {"held": "#137333", "not held": "#b3261e", "inconclusive": "#c77700"}


def forest_points(r: Result) -> list[dict]:
    """Per gate (and each part of a compound gate): the estimate and interval as a signed, relative distance to the
    threshold (positive = on the claim's side), with the resolution band, for the forest plot."""
    rows = []
    for c in r.claims:
        if not c.gate:
            continue
        parts = c.decision.parts or (c.decision,)
        for p in parts:
            name = c.id if len(parts) == 1 else f"{c.id} {p.label or ''}".strip()
            sign = 1.0 if p.direction == ">=" else -1.0
            scale = max(abs(p.threshold), abs(p.estimate) if p.estimate == p.estimate else 0.0, 1e-12)
            iv = p.interval
            if iv is None or iv.method == "exact":
                lo = hi = p.estimate
            else:
                lo, hi = iv.low, iv.high
            a, b = sorted(((lo - p.threshold) * sign / scale, (hi - p.threshold) * sign / scale))
            rows.append({"name": name, "verdict": p.verdict, "est": (p.estimate - p.threshold) * sign / scale,
                         "lo": a, "hi": b, "band": p.resolution / scale, "exact": iv is None or iv.method == "exact"})
    return rows


def forest_plot(r: Result, path: Path) -> Path | None:
    """Save the forest plot of `r`'s gates to `path` (PNG); None when the result has no gates."""
    pts = forest_points(r)
    if not pts:
        return None
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    finite = [abs(v) for p in pts for v in (p["est"], p["lo"], p["hi"]) if v == v and abs(v) != float("inf")]
    lim = min(max(finite + [0.1]) * 1.15, 1.5)  # beyond +-150 % of the threshold: an arrow
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(pts) + 1.1))
    for i, p in enumerate(reversed(pts)):
        col = _COLOURS.get(p["verdict"], "#888")
        lo, hi = max(p["lo"], -lim), min(p["hi"], lim)
        if p["est"] == p["est"]:
            ax.plot([lo, hi], [i, i], color=col, lw=2.2, solid_capstyle="butt")
            ax.plot([max(min(p["est"], lim), -lim)], [i], "o" if not p["exact"] else "D", color=col, ms=6)
            for end, edge in ((p["lo"], -lim), (p["hi"], lim)):
                if abs(end) > lim:
                    ax.annotate("", xy=(edge, i), xytext=(edge * 0.93, i),
                                arrowprops={"arrowstyle": "->", "color": col})
        else:
            ax.text(0, i, "not measured", ha="center", va="center", color="#888", fontsize=8)
        if p["band"] > 0:
            ax.fill_between([-p["band"], p["band"]], i - 0.3, i + 0.3, color="#bbb", alpha=0.5, lw=0)
    ax.axvline(0, color="#444", lw=1)
    ax.set_yticks(range(len(pts)), [p["name"] for p in reversed(pts)])
    ax.set_xlim(-lim, lim)
    ax.set_xlabel("(estimate - threshold) / max(|threshold|, |estimate|), signed: right = the claim's side")
    handles = [plt.Line2D([], [], color=c, lw=3, label=v) for v, c in _COLOURS.items()]
    ax.legend(handles=handles, loc="lower right", fontsize=7, frameon=False)
    ax.set_title(f"{r.slug} ({r.scale}): gates, interval vs threshold (grey: resolution band)", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path


def _forest_path(root: Path, e: Entry) -> Path:
    return root / "figures" / f"{e.anchor}-verdicts.png"


def report_header() -> dict[str, str]:
    """Commit, date and machine of the report itself."""
    from icml26.provenance import cpu_model, git_info, package_version

    g = git_info()
    commit = (g["commit"][:12] + (" (dirty)" if g.get("dirty") else "")) if g else "not a git checkout"
    import os

    return {"commit": commit, "icml26": package_version(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{cpu_model()}, {os.cpu_count()} cores, {platform.platform()}"}


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _run_line(e: Entry) -> str:
    r = e.result
    prov = r.provenance
    commit = prov.get("commit", "")
    bits = [f"runtime {r.runtime_s:.1f} s", f"run {r.created}", f"config hash {r.config_hash}"]
    if commit:
        bits.append(f"commit {commit[:12]}{' (dirty)' if prov.get('dirty') else ''}")
    cpu = (prov.get("machine") or {}).get("cpu")
    if cpu:
        bits.append(cpu)
    return " · ".join(bits)


def _banners(e: Entry) -> list[str]:
    out = []
    if e.scale == "smoke":
        out.append("Smoke run: checks the plumbing only, at a size where the claims cannot be decided; its "
                   "verdicts say nothing about the paper.")
    if e.is_override:
        out.append(f"Run with overrides {json.dumps(e.result.overrides)}: not the canonical configuration.")
    if e.stale:
        out.append("Stale: the paper's code differs from the code that made this result (or the result records no code "
                   "hash); `icml26 reproduce` re-runs it.")
    return out


_INTRO = ("Each paper's headline claims, re-measured at CPU scale, beside the paper's own figure. A verdict is "
          "computed from the interval of the measured estimate, never the point: **held** when the interval clears "
          "the threshold on the claim's side, **not held** when it clears it on the other side, **inconclusive** "
          "when it reaches the threshold (with what would decide it). Only gates count; 'report' claims are "
          "measured beside them; sanity checks (hold by construction, or check plumbing) are listed apart and "
          "are no evidence for the paper.")


def _split(r: Result) -> tuple[list[Claim], list[Claim]]:
    main = [c for c in r.claims if c.kind != "sanity"]
    return main, [c for c in r.claims if c.kind == "sanity"]


def _details_text(c: Claim) -> str:
    why = c.decision.text()
    return f"{why}. {c.details}" if c.details else why


def build_markdown(root: Path, entries: dict[str, list[Entry]], header: dict[str, str],
                   forests: dict[str, Path] | None = None) -> str:
    forests = forests or {}
    out = ["# icml26 reproduction report", "",
           f"commit {header['commit']} · icml26 {header['icml26']} · {header['date']} · {header['machine']}", "",
           _INTRO, ""]
    if not entries:
        out += [f"No saved results under `{root}` yet: run `icml26 reproduce` (or `icml26 run SLUG`).", ""]
    out += [summary_markdown(root), ""]
    for slug, es in entries.items():
        title, arxiv = _title(slug)
        for e in es:
            out += [f"## {slug} ({e.folder.name}): {title}", ""]
            if e.result is None:
                out += [f"**{e.problem}** (`{e.folder / 'result.json'}`)", ""]
                continue
            r = e.result
            link = f"arXiv: [{arxiv}](https://arxiv.org/abs/{arxiv}) · " if arxiv != "n/a" else ""
            out += [link + _run_line(e), "", f"Gates: {counts_text(r)}.", ""]
            out += [f"> {b}" for b in _banners(e)] + ([""] if _banners(e) else [])
            main, sanity = _split(r)
            for block, claims in (("", main), ("Sanity checks (hold by construction or check the plumbing; not "
                                               "evidence for the paper)", sanity)):
                if not claims:
                    continue
                if block:
                    out += [f"**{block}**", ""]
                out += ["| claim | statement | paper | ours | threshold | verdict | kind |",
                        "|---|---|---|---|---|---|---|"]
                for c in claims:
                    verdict = verdict_text(c) if e.scale == "smoke" or measured_only(c) else f"**{c.verdict}**"
                    out.append(f"| {c.id} | {_md_cell(c.statement)} | {_md_cell(c.paper or '-')} | "
                               f"{_md_cell(format_ours(c))} | {_md_cell(c.threshold)} | {verdict} | {c.kind} |")
                out.append("")
            out += [f"- {c.id}: {_md_cell(_details_text(c))}" for c in r.claims]
            if e.anchor in forests:
                rel = forests[e.anchor].relative_to(root)
                cap = "Each gate's estimate and interval as a distance to its threshold"
                out += ["", f"![{cap}]({rel.as_posix()})", f"*{cap}*"]
            if r.notes:
                out += ["", r.notes]
            for fig in r.figures:
                rel = (e.folder / fig).relative_to(root)
                cap = r.figure_captions.get(fig, fig)
                out += ["", f"![{cap}]({rel.as_posix()})", f"*{cap}*"]
            out += ["", "<details><summary>config, provenance and versions</summary>", "", "```json",
                    json.dumps({"config": r.config, "provenance": r.provenance, "versions": r.versions}, indent=2,
                               default=str), "```", "", "</details>", ""]
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.8em 0;width:100%}th,td{border:1px solid #ccc;padding:.35em .6em;
vertical-align:top;text-align:left;font-size:.92em}th{background:#f3f3f3}
.held{color:#137333;font-weight:600}.nothold{color:#b3261e;font-weight:600}.inconclusive{color:#c77700;font-weight:600}
.muted{color:#666;font-size:.9em}.grey{color:#888;font-weight:400}
.banner{background:#fff7e0;border-left:4px solid #e0a800;padding:.5em .8em;margin:.6em 0}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;
font-size:.85em}section{border-top:2px solid #ddd;margin-top:2em}figcaption{color:#444;font-size:.9em}
.notes table{width:auto}.sanity{opacity:.8}
"""


def render_markdown(text: str) -> str:
    """Markdown (tables included) to HTML for a result's notes; raw HTML in the notes is escaped."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _counts_html(r: Result, grey: bool) -> str:
    c = gate_counts(r)
    if grey:
        return html.escape(counts_text(r))
    return (f"<span class='held'>held {c['held']}</span> · <span class='nothold'>not held {c['not held']}</span> · "
            f"<span class='inconclusive'>inconclusive {c['inconclusive']}</span>")


def _img(path: Path, cap: str, name: str) -> str:
    e_ = html.escape
    b64 = base64.b64encode(path.read_bytes()).decode()
    return (f"<figure><img alt='{e_(cap)}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{e_(cap)} <span class='muted'>({e_(name)})</span></figcaption></figure>")


def build_html(root: Path, entries: dict[str, list[Entry]], header: dict[str, str],
               forests: dict[str, Path] | None = None) -> str:
    forests = forests or {}
    e_ = html.escape
    intro = e_(_INTRO).replace("**", "")
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>icml26 report</title>",
             f"<style>{_CSS}</style></head><body><h1>icml26 reproduction report</h1>",
             f"<p class='muted' id='header'>commit {e_(header['commit'])} · icml26 {e_(header['icml26'])} · "
             f"{e_(header['date'])} · {e_(header['machine'])}</p>", f"<p>{intro}</p>"]
    if not entries:
        parts.append(f"<p class='banner'>No saved results under <code>{e_(str(root))}</code> yet: run "
                     "<code>icml26 reproduce</code> (or <code>icml26 run SLUG</code>).</p>")
    parts.append("<table id='summary'><tr><th>paper</th><th>status</th><th>gates</th>"
                 "<th>reported</th><th>sanity checks</th><th>runtime</th></tr>")
    for row in summary_rows(root):
        es = entries.get(row["slug"], [])
        main = _main_entry(es)
        name = e_(row["slug"])
        gates = e_(row["gates"] or "-")
        if main is not None:
            name = f"<a href='#{e_(main.anchor)}'>{name}</a>"
            if main.result is not None:
                gates = _counts_html(main.result, grey=main.scale == "smoke")
        parts.append(f"<tr><td>{name}</td><td>{e_(row['status'])}</td><td class='gates'>{gates}</td>"
                     f"<td>{e_(row['reported'] or '-')}</td><td>{e_(row['sanity'] or '-')}</td>"
                     f"<td>{e_(row['runtime'] or '-')}</td></tr>")
    parts.append("</table>")
    for slug, es in entries.items():
        title, arxiv = _title(slug)
        for en in es:
            parts.append(f"<section id='{e_(en.anchor)}' data-scale='{e_(en.scale)}'>"
                         f"<h2>{e_(slug)} ({e_(en.folder.name)})</h2>")
            if en.result is None:
                parts.append(f"<p class='banner'>{e_(en.problem)}</p></section>")
                continue
            r = en.result
            link = f" · <a href='https://arxiv.org/abs/{e_(arxiv)}'>arXiv {e_(arxiv)}</a>" if arxiv != "n/a" else ""
            parts.append(f"<p>{e_(title)}{link}<br><span class='muted'>{e_(_run_line(en))}</span><br>"
                         f"Gates: {_counts_html(r, grey=en.scale == 'smoke')}</p>")
            parts += [f"<p class='banner'>{e_(b)}</p>" for b in _banners(en)]
            main, sanity = _split(r)
            for block, claims in (("", main), ("Sanity checks: hold by construction or check the plumbing; not "
                                               "evidence for the paper", sanity)):
                if not claims:
                    continue
                table_cls = "claims sanity" if block else "claims"
                if block:
                    parts.append(f"<h3 class='sanity'>{e_(block)}</h3>")
                parts.append(f"<table class='{table_cls}'><tr><th>claim</th><th>statement</th><th>paper</th>"
                             "<th>ours</th><th>threshold</th><th>verdict</th><th>kind</th></tr>")
                for c in claims:
                    cls = "grey" if en.scale == "smoke" else verdict_class(c)
                    det = f"<br><span class='muted'>{e_(_details_text(c))}</span>"
                    rest = format_measured(c.measured)
                    seeds = c.seed_summary
                    sub = (f"per seed {seeds[0]:.4g} ± {seeds[1]:.2g} over {seeds[2]} seed"
                           f"{'s' if seeds[2] > 1 else ''}; " if seeds else "") + rest
                    parts.append(f"<tr><td>{e_(c.id)}</td><td>{e_(c.statement)}{det}</td>"
                                 f"<td>{e_(c.paper or '-')}</td>"
                                 f"<td><b>{e_(format_estimate(c))}</b><br><span class='muted'>{e_(sub)}</span></td>"
                                 f"<td>{e_(c.threshold)}</td><td class='verdict {cls}'>{e_(verdict_text(c))}</td>"
                                 f"<td>{e_(c.kind)}</td></tr>")
                parts.append("</table>")
            if en.anchor in forests:
                parts.append(_img(forests[en.anchor], "Each gate's estimate and interval as a signed distance to its "
                                  "threshold (relative to max(|threshold|, |estimate|)); colour = verdict",
                                  forests[en.anchor].name))
            if r.notes:
                parts.append(f"<div class='notes'>{render_markdown(r.notes)}</div>")
            for fig in r.figures:
                f = en.folder / fig
                if f.exists():
                    parts.append(_img(f, r.figure_captions.get(fig, fig), fig))
            blob = json.dumps({"config": r.config, "metrics": r.metrics, "provenance": r.provenance,
                               "versions": r.versions}, indent=2, default=str)
            parts.append(f"<details><summary>config, metrics, provenance, versions</summary><pre>{e_(blob)}</pre>"
                         "</details></section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(root: str | Path = "runs") -> tuple[Path, Path]:
    """Write `<root>/report.md` and `<root>/report.html`; returns their paths."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    entries = collect_entries(root)
    header = report_header()
    forests = {}
    for es in entries.values():
        for e in es:
            if e.result is not None and forest_plot(e.result, _forest_path(root, e)) is not None:
                forests[e.anchor] = _forest_path(root, e)
    md, htm = root / "report.md", root / "report.html"
    atomic_write_bytes(md, build_markdown(root, entries, header, forests).encode())
    atomic_write_bytes(htm, build_html(root, entries, header, forests).encode())
    return md, htm


# ---------------------------------------------------------------------------------------------- README
README_START, README_END = "<!-- papers-table -->", "<!-- /papers-table -->"


def _gate_brief(c: Claim) -> str:
    """One gate for the README: its verdict and the part that decides it (for a compound gate, the parts with the
    gate's own verdict, nearest the bar first; at most two, the rest counted)."""
    d = c.decision
    if not d.parts:
        return f"{c.id} {c.verdict} ({_short(d)})"
    same = [p for p in d.parts if p.verdict == d.verdict] or list(d.parts)

    def room(p) -> float:
        scale = max(abs(p.threshold), abs(p.estimate) if p.estimate == p.estimate else 0.0, 1e-12)
        return abs(p.distance) / scale if p.distance == p.distance else 0.0

    same.sort(key=room)
    shown = "; ".join(f"{_label(p.label)} {_short(p)}" for p in same[:2])
    more = len(d.parts) - min(len(same), 2)
    return f"{c.id} {c.verdict} ({shown}{f'; {more} more part' + ('s' if more > 1 else '') if more else ''})"


def _label(text: str, width: int = 48) -> str:
    text = text or "part"
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(d) -> str:
    if d.estimate != d.estimate:
        return "not measured"
    iv = d.interval
    head = f"{d.estimate:.3g}"
    if iv is not None and iv.method != "exact":
        lo = "-inf" if iv.low == float("-inf") else f"{iv.low:.3g}"
        hi = "inf" if iv.high == float("inf") else f"{iv.high:.3g}"
        head += f" [{lo}, {hi}]"
    return f"{head} vs {d.direction} {d.threshold:.3g}"


def readme_rows(root: str | Path, scale: str = "small") -> list[str]:
    """The README papers table, one row per registry paper, written from the saved `scale` results only."""
    root = Path(root)
    lines = ["| slug | paper | import | gates (small scale, 2-core CPU): held · not held · inconclusive |",
             "|---|---|---|---|"]
    entries = collect_entries(root)
    for slug, p in PAPERS.items():
        e = next((x for x in entries.get(slug, []) if x.scale == scale and not x.is_override), None)
        title = f"{p.title} ([{p.arxiv}](https://arxiv.org/abs/{p.arxiv}))" if p.arxiv != "n/a" else p.title
        imp = f"`{p.imports}`" if p.imports else "-"
        if e is None:
            cell = f"not run at {scale}"
        elif e.result is None:
            cell = e.problem
        else:
            r = e.result
            gates = [c for c in r.claims if c.gate]
            cell = f"**{counts_text(r)}**" + (" (stale: code changed since this run)" if e.stale else "")
            if gates:
                cell += ": " + "; ".join(_gate_brief(c) for c in gates)
            san = [c for c in r.claims if c.kind == "sanity"]
            if san:
                cell += f"; sanity {sum(c.held for c in san)}/{len(san)}"
        lines.append(f"| [{slug}](docs/{slug}.md) | {_md_cell(title)} | {imp} | {_md_cell(cell)} |")
    return lines


def update_readme(root: str | Path = "runs", readme: str | Path = "README.md", scale: str = "small") -> bool:
    """Rewrite the papers table between the README's markers from the saved results; True if it changed.

    Raises ValueError when the README lacks the markers."""
    readme = Path(readme)
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        raise ValueError(f"{readme} has no {README_START} ... {README_END} markers")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    body = "\n".join(readme_rows(root, scale))
    note = ("\n\nGenerated by `icml26 report --update-readme` from the saved small results (never typed by hand); "
            "each gate shows its estimate, 95 % interval and threshold. See [Reading a verdict](#reading-a-verdict).")
    new = f"{head}{README_START}\n{body}{note}\n{README_END}{tail}"
    if new == text:
        return False
    atomic_write_bytes(readme, new.encode())
    return True
