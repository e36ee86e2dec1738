"""What a citation shows: the figures of the citing sentence found in the source's text or facts,
filing text kept as text, and charts whose labels cannot become markup."""

from __future__ import annotations

from dexter.reports.charts import Chart
from dexter.reports.model import Row
from dexter.tools.untrusted import wrap_untrusted
from dexter.web.evidence import citing_sentences, figures_in, source_view
from dexter.web.svg_charts import chart_svg

ANSWER = (
    "Revenue was **$391,035 million** in FY2024 [S1]. Gross margin was 46.2% [S2].\n"
    "Services grew to $96.2 billion [S1, S2]."
)


def test_the_citing_sentence_and_its_figures() -> None:
    assert citing_sentences(ANSWER, "S1") == [
        "Revenue was $391,035 million in FY2024 [S1].",
        "Services grew to $96.2 billion [S1, S2].",
    ]
    assert citing_sentences(ANSWER, "S2", occurrence=1) == ["Gross margin was 46.2% [S2]."]
    revenue = figures_in("Revenue was $391,035 million in FY2024 [S1].")
    assert [f.digits for f in revenue] == ["391035"]  # not the year, not the source number
    assert revenue[0].matches(391_035e6) and not revenue[0].matches(391_036e6)
    (services,) = figures_in("Services grew to $96.2 billion")
    assert services.matches(96_169e6) and not services.matches(96_300e6)
    (margin,) = figures_in("46.2%")
    assert margin.matches(0.4621) and not margin.matches(0.4631)


def _records(text: str) -> list[dict[str, object]]:
    result = "## AAPL 10-K — Item 7 [S2]\n" + wrap_untrusted("https://www.sec.gov/x", text)
    return [
        {"type": "tool_call", "tool": "filing_section", "args": {}, "result": result},
        {"type": "answer", "sources": [{"id": "S2", "label": "SEC EDGAR 10-K", "url": None}]},
    ]


def test_the_passage_stating_the_figure_is_marked_and_filing_text_stays_text() -> None:
    text = (
        "Opening words.\n\nTotal gross margin percentage 46.2 % 44.1 %\n\n"
        "<script>alert(1)</script> Other text."
    )
    view = source_view(_records(text), ANSWER, "S2", occurrence=1)
    assert view is not None and view.found
    (passage,) = view.passages
    assert passage.heading == "AAPL 10-K — Item 7 [S2]"
    hits = [p for p in passage.paragraphs if p is not None and p.hit]
    assert len(hits) == 1 and hits[0].anchor == "passage"
    assert [s.text for s in hits[0].segments if s.marked] == ["46.2"]
    # The script is one more paragraph of plain text for the autoescaping template.
    last = passage.paragraphs[-1]
    assert last is not None and last.segments[0].text.startswith("<script>")
    assert source_view(_records(text), ANSWER, "S9") is None


def test_chart_labels_are_escaped_and_every_point_has_a_hover_value() -> None:
    rows = (Row("revenue", "Revenue <b>", "money", (383_285e6, 391_035e6)),)
    svg = chart_svg(Chart("AAPL: <i>Revenue</i>", "USD millions", ("FY2023", "FY2024"), rows), "k")
    assert "<b>" not in svg and "<i>" not in svg and "&lt;b&gt;" in svg
    assert "<title>Revenue &lt;b&gt;, FY2024: 391,035 USD millions</title>" in svg
    assert svg.count("<circle") == 2


def test_a_rounded_figure_finds_the_exact_one_in_the_filing() -> None:
    text = "Net sales by category\n\nTotal net sales $ 391,035 $ 383,285\n\nFiscal 2024 ended."
    view = source_view(_records(text), "Sales were $391.0 billion in 2024 [S2].", "S2")
    assert view is not None and view.found
    marked = [s.text for p in view.passages[0].paragraphs if p for s in p.segments if s.marked]
    assert marked == ["391,035"]  # not 383,285, not the year
