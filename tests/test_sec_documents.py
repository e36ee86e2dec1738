"""Filing HTML to text, and 10-K / 10-Q items, on Apple's real FY2024 10-K and small samples."""

from __future__ import annotations

import re
from functools import cache

import pytest

from dexter.data.errors import NotFound, Unavailable
from dexter.data.sec import urls
from dexter.data.sec.documents import extract_item, extract_items, html_to_text
from dexter.data.sec.items import resolve_item
from tests.support.fixtures import sec_mirror_file

APPLE_10K = urls.filing_document(320193, "0000320193-24-000123", "aapl-20240928.htm")


@cache
def _apple_text() -> str:
    return html_to_text(sec_mirror_file(APPLE_10K).read_bytes())


@pytest.fixture
def apple_text() -> str:
    return _apple_text()


# -- html_to_text --------------------------------------------------------------------------------


def test_apple_10k_text_has_no_markup_hidden_xbrl_or_page_footers(apple_text: str) -> None:
    assert not re.search(r"<[a-zA-Z/!?][^>]*>", apple_text)
    assert not re.search(r"&(#\d+|#x[0-9a-f]+|[a-z]+);", apple_text, re.IGNORECASE)
    # The ix:header block (hidden facts) is not visible text.
    assert "dei:AmendmentFlag" not in apple_text
    assert "fasb.org/us-gaap/2024#MarketableSecuritiesCurrent" not in apple_text
    # Running footers ("Apple Inc. | 2024 Form 10-K | 17") are page furniture, not content.
    assert "2024 Form 10-K | 17" not in apple_text
    assert "Apple Inc.\n\nForm 10-K\n\nFor the Fiscal Year Ended September 28, 2024" in apple_text


def test_financial_tables_keep_labels_next_to_their_figures(apple_text: str) -> None:
    assert "Total net sales | 391,035 | 383,285 | 394,328" in apple_text
    assert "Net income | $93,736 | $96,995 | $99,803" in apple_text
    assert "Greater China | 66,952 | (8)% | 72,559 | (2)% | 74,200" in apple_text
    assert "Diluted | $6.08 | $6.13 | $6.11" in apple_text


def test_html_to_text_decodes_entities_and_drops_invisible_content() -> None:
    html = (
        b"<html><head><title>t</title><style>p{color:red}</style></head><body>"
        b"<p>Caf\xe9 &amp; the Company&#8217;s&nbsp;<b>results</b>"
        b"<p>second paragraph<br>next line"
        b"<script>alert(1)</script>"
        b'<div style="display: none">secret <ix:header>facts</ix:header></div>'
        b"<table><tr><td>Net sales<td><td>$<td>1,234<td><td>(56<td>)<td>12<td>%"
        b"<tr><td></td><td>2024</td><td>2023</td></tr></table>"
        b"<div>after the table</div></body></html>"
    )
    assert html_to_text(html) == (
        "Café & the Company’s results\n\n"
        "second paragraph\nnext line\n\n"
        "Net sales | $1,234 | (56) | 12%\n"
        "| 2024 | 2023\n\n"
        "after the table\n"
    )


def test_plain_text_and_preformatted_filings_keep_their_lines() -> None:
    assert html_to_text("ITEM 1.  BUSINESS\n\n   The Company makes things.\nMore.\n") == (
        "ITEM 1. BUSINESS\n\nThe Company makes things.\nMore.\n"
    )
    html = "<html><body><pre>ITEM 7.  MD&amp;A\n\n  Sales   rose.\n</pre><p>after</p></body></html>"
    assert html_to_text(html) == "ITEM 7. MD&A\n\nSales rose.\n\nafter\n"


# -- 10-K items ----------------------------------------------------------------------------------


def test_risk_factors_are_the_real_section_not_the_table_of_contents(apple_text: str) -> None:
    section = extract_item(apple_text, "10-K", "1A")
    assert section.item == "1A"
    assert section.title == "Risk Factors"
    assert section.text.startswith("Item 1A. Risk Factors\n\nThe Company’s business, reputation")
    assert 60_000 < len(section.text) < 80_000
    assert "adverse economic conditions can materially adversely affect" in section.text
    assert "The price of the Company’s stock is subject to volatility." in section.text
    assert "| Risk Factors | 5" not in section.text  # the contents line
    assert "Item 1B" not in section.text
    assert "<" not in section.text and "&#" not in section.text


def test_mdna_is_extracted_with_its_tables(apple_text: str) -> None:
    section = extract_item(apple_text, "10-K", "7")
    assert section.text.startswith(
        "Item 7. Management’s Discussion and Analysis of Financial Condition"
    )
    assert 12_000 < len(section.text) < 20_000
    assert "Total net sales | $391,035 | 2% | $383,285 | (3)% | $394,328" in section.text
    assert "Greater China net sales decreased during 2024 compared to 2023" in section.text
    assert "Item 7A" not in section.text


@pytest.mark.parametrize("alias", ["1a", "Item 1A", "ITEM 1A.", "risk factors", "Risk Factors"])
def test_item_aliases_reach_the_same_section(apple_text: str, alias: str) -> None:
    assert extract_item(apple_text, "10-K", alias).item == "1A"


@pytest.mark.parametrize("alias", ["MD&A", "mda", "Management's Discussion", "item 7"])
def test_mdna_aliases(apple_text: str, alias: str) -> None:
    assert extract_item(apple_text, "10-K", alias).item == "7"


def test_every_10k_item_is_found_in_order(apple_text: str) -> None:
    sections = extract_items(apple_text, "10-K")
    assert list(sections) == [
        *("1", "1A", "1B", "1C", "2", "3", "4", "5", "6", "7", "7A", "8"),
        *("9", "9A", "9B", "9C", "10", "11", "12", "13", "14", "15", "16"),
    ]
    assert sections["1B"].text == "Item 1B. Unresolved Staff Comments\n\nNone.\n"
    assert (
        sections["4"].text == "Item 4. Mine Safety Disclosures\n\nNot applicable.\n"
    )  # no PART II
    assert sections["6"].text == "Item 6. [Reserved]\n"
    assert "Total net sales | 391,035 | 383,285 | 394,328" in sections["8"].text
    assert "SIGNATURES" not in sections["16"].text
    assert "2025 Proxy Statement" in sections["11"].text


def test_unknown_item_names_the_valid_items(apple_text: str) -> None:
    with pytest.raises(NotFound) as err:
        extract_item(apple_text, "10-K", "1D")
    assert "'1D'" in str(err.value) and "1A, 1B, 1C" in str(err.value)


def test_item_missing_from_the_filing_lists_the_items_found(apple_text: str) -> None:
    truncated = apple_text[: apple_text.index("Item 9. Changes in and Disagreements")]
    with pytest.raises(NotFound) as err:
        extract_item(truncated, "10-K", "Executive Compensation")
    message = str(err.value)
    assert "Item 11 (Executive Compensation) was not found" in message
    assert "Items found: 1, 1A, 1B, 1C, 2, 3, 4, 5, 6, 7, 7A, 8." in message


def test_forms_without_items_are_refused_plainly() -> None:
    with pytest.raises(Unavailable, match="8-K"):
        extract_items("Item 2.02 Results of Operations", "8-K")


# -- 10-Q items (a small filing shaped like the real ones) ---------------------------------------


TEN_Q = """
<html><body>
<div>PART I — FINANCIAL INFORMATION</div>
<table>
<tr><td>Item 1.</td><td>Financial Statements</td><td>1</td></tr>
<tr><td>Item 2.</td><td>Management&#8217;s Discussion and Analysis</td><td>12</td></tr>
<tr><td>Item 3.</td><td>Quantitative and Qualitative Disclosures About Market Risk</td>
<td>18</td></tr>
<tr><td>Item 4.</td><td>Controls and Procedures</td><td>18</td></tr>
<tr><td colspan="3">Part II — Other Information</td></tr>
<tr><td>Item 1.</td><td>Legal Proceedings</td><td>19</td></tr>
<tr><td>Item 1A.</td><td>Risk Factors</td><td>19</td></tr>
<tr><td>Item 2.</td><td>Unregistered Sales of Equity Securities and Use of Proceeds</td>
<td>20</td></tr>
<tr><td>Item 5.</td><td>Other Information</td><td>20</td></tr>
<tr><td>Item 6.</td><td>Exhibits</td><td>21</td></tr>
</table>
<div>PART I — FINANCIAL INFORMATION</div>
<div>Item 1. Financial Statements</div><p>Condensed consolidated statements follow.</p>
<div>Item 2. Management&#8217;s Discussion and Analysis of Financial Condition</div>
<p>Net sales rose 6% in the quarter. See Part II, Item 1A of this Form 10-Q.</p>
<div>Item 3. Quantitative and Qualitative Disclosures About Market Risk</div><p>No change.</p>
<div>Item 4. Controls and Procedures</div><p>Controls are effective.</p>
<div>PART II — OTHER INFORMATION</div>
<div>Item 1. Legal Proceedings</div><p>See Note 10.</p>
<div>Item 1A. Risk Factors</div><p>No material changes from the annual report.</p>
<div>Item 2. Unregistered Sales of Equity Securities and Use of Proceeds</div>
<p>The Company repurchased 100 million shares.</p>
<div>Item 5. Other Information</div><p>None.</p>
<div>Item 6. Exhibits</div><p>31.1 Certification.</p>
<div>SIGNATURES</div><p>Signed by the CFO.</p>
</body></html>
"""


def test_10q_items_are_keyed_by_part() -> None:
    text = html_to_text(TEN_Q)
    sections = extract_items(text, "10-Q")
    assert list(sections) == [
        "Part-I,Item-1",
        "Part-I,Item-2",
        "Part-I,Item-3",
        "Part-I,Item-4",
        "Part-II,Item-1",
        "Part-II,Item-1A",
        "Part-II,Item-2",
        "Part-II,Item-5",
        "Part-II,Item-6",
    ]
    mdna = extract_item(text, "10-Q", "MD&A")
    assert mdna.item == "Part-I,Item-2"
    assert mdna.text.startswith("Item 2. Management’s Discussion")
    assert "Net sales rose 6%" in mdna.text
    assert "Item 3" not in mdna.text
    assert "repurchased 100 million" in extract_item(text, "10-Q", "Part II, Item 2").text
    assert extract_item(text, "10-Q", "Part-I,Item-2").item == "Part-I,Item-2"
    assert "No material changes" in extract_item(text, "10-Q", "risk factors").text
    assert extract_item(text, "10-Q", "4").item == "Part-I,Item-4"  # bare numbers: Part I first
    assert "Signed by" not in extract_item(text, "10-Q", "exhibits").text
    assert extract_item(text, "10-Q", "4").text.endswith("Controls are effective.\n")  # no PART II
    with pytest.raises(NotFound, match="Part-II,Item-3"):
        extract_item(text, "10-Q", "defaults upon senior securities")


def test_resolve_item_understands_how_people_name_items() -> None:
    assert resolve_item("10-K", "market risk").key == "7A"
    assert resolve_item("10-K/A", "Item 7A: Quantitative and Qualitative").key == "7A"
    assert resolve_item("10-K", "cybersecurity").key == "1C"
    assert resolve_item("10-Q", "part 2 item 1a").key == "Part-II,Item-1A"
    assert resolve_item("10-Q", "1A").key == "Part-II,Item-1A"
    assert resolve_item("10-Q", "controls").key == "Part-I,Item-4"
