"""What the page makes of run text: a hostile answer stays inert, figures carry the verifier's
marks, citations lead to their own answer's sources."""

from __future__ import annotations

from dexter.figures.types import Figure, Verification
from dexter.web.render import answer_with_marks, figures_note, markdown_html, shown

HOSTILE = (
    "Revenue rose. <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
    "[click](javascript:alert(3)) ![pixel](http://10.0.0.1/p.gif) [ok](https://www.sec.gov/)"
)


def test_a_hostile_answer_is_shown_as_text_and_loads_nothing() -> None:
    html = markdown_html(HOSTILE)
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript' not in html
    assert '<a href="https://www.sec.gov/">ok</a>' in html


def test_figures_are_marked_and_citations_lead_to_this_answers_sources() -> None:
    answer = "Revenue was $391,035 million [S1], margin 99.9% [S2]."
    checked = Verification(
        (
            Figure("$391,035 million", 391_035e6, "USD", "verified", source="income", start=12,
                   end=28),
            Figure("99.9%", 99.9, "%", "unsupported", start=42, end=47),
        )
    )  # fmt: skip
    html = answer_with_marks(answer, checked, "run-7")
    assert '<span class="fig verified"' in html and "$391,035 million</span>" in html
    assert '<mark class="fig unchecked"' in html and "99.9%</mark>" in html
    # Each citation opens its source's page at the passage that citation points to.
    assert 'href="/sources/run-7/S1?c=0#passage"' in html
    assert 'href="/sources/run-7/S2?c=1#passage"' in html
    note = figures_note(checked)
    assert note is not None and note["summary"] == "1 of 2 figures checked"
    assert note["unchecked"] == "† 1 figure could not be checked against the data: 99.9%"


def test_tool_rows_show_at_most_a_screenful() -> None:
    assert shown({"company": "AAPL"}) == '{"company": "AAPL"}'
    long = shown("x" * 10_000)
    assert len(long) < 4_100 and long.endswith("(10,000 characters in all)")
