import matplotlib.pyplot as plt

from icml26.report import build_report, summary_markdown
from icml26.results import Claim, Result, save_result


def test_report_builds_from_saved_results(tmp_path):
    r = Result(slug="pope", scale="small", config={"seed": 0}, runtime_s=12.0)
    r.claims.append(Claim("A", "PoPE extrapolates <better>", "margin", 0.42, ">= 0.15", 0.42 >= 0.15))
    r.claims.append(Claim("C", "indirect indexing", "acc gap", 3.0, ">= 40", 3.0 >= 40, gate=False))
    fig, ax = plt.subplots()
    ax.plot([1, 2])
    r.add_figure("loss_vs_ctx", fig)
    save_result(r, tmp_path / "pope" / "small")
    (tmp_path / "broken" / "small").mkdir(parents=True)
    (tmp_path / "broken" / "small" / "result.json").write_text("{not json")  # skipped, not fatal
    md, html = build_report(tmp_path)
    h = html.read_text()
    assert "<table>" in h and "PoPE extrapolates &lt;better&gt;" in h  # escaped
    assert "data:image/png;base64," in h  # self-contained
    assert "not held" in h and "held" in h
    m = md.read_text()
    assert "| A |" in m and "0.42" in m and "pope/small/loss_vs_ctx.png" in m
    assert "| pope | small | 1/1 | 0/1 | 12 s |" in summary_markdown(tmp_path)


def test_report_on_empty_folder(tmp_path):
    md, html = build_report(tmp_path / "runs")
    assert html.exists() and "icml26 reproduction report" in html.read_text()
