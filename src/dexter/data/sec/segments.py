"""Revenue and operating income by business segment, geography and product, from a filing's own
XBRL dimensional facts.

A 10-K tags each segment-note figure with a context naming a member on an axis
(`us-gaap:StatementBusinessSegmentsAxis` = `amzn:NorthAmericaSegmentMember`). Facts are grouped
into breakdowns (one concept, one period, one axis, any other members held fixed, such as
Netflix's streaming revenue by region), each checked against the total the filing reports, with a
plain note when the members do not add up and why. Pure functions over a parsed instance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Literal

from pydantic import Field

from dexter.data.models import Record, Source
from dexter.data.sec.xbrl_instance import Fact, Instance

AxisKind = Literal["business segment", "geography", "product or service"]
_STANDARD_AXES: dict[str, AxisKind] = {
    "StatementBusinessSegmentsAxis": "business segment",
    "StatementGeographicalAxis": "geography",
    "ProductOrServiceAxis": "product or service",
}
_AXIS_ORDER: dict[AxisKind, int] = {"business segment": 0, "geography": 1, "product or service": 2}
_STANDARD_PREFIXES = frozenset({"us-gaap", "srt", "dei", "ifrs-full", "country", "currency"})
REVENUE_CONCEPTS = (
    "Revenues",
    "RevenueFromContractWithCustomerExcludingAssessedTax",
    "RevenueFromContractWithCustomerIncludingAssessedTax",
    "SalesRevenueNet",
    "RevenuesNetOfInterestExpense",
)
OPERATING_INCOME = "OperatingIncomeLoss"
# `ProductMember` / `ServiceMember` split revenue into goods and services on the face of the
# income statement; product lines are a second, overlapping split on the same axis.
_GOODS_AND_SERVICES = frozenset({"ProductMember", "ServiceMember"})
# Revenue by segment is sometimes also tagged "operating segments" on this axis; it adds nothing.
_NEUTRAL = frozenset({("ConsolidationItemsAxis", "OperatingSegmentsMember")})
_NON_US = "NonUsMember"
_US = frozenset({"country:US", "us-gaap:US", "srt:US"})


class SegmentMember(Record):
    member: str  # QName, "amzn:NorthAmericaSegmentMember"
    label: str  # the company's own label, "North America"
    value: int | float


class WithinMember(Record):
    axis: str
    member: str
    label: str


class SegmentBreakdown(Record):
    measure: str  # "Revenue", "Operating income (loss)", or the company's label for its metric
    concept: str
    axis: str
    axis_kind: AxisKind
    within: list[WithinMember] = Field(default_factory=list)  # members held fixed
    unit: str
    members: list[SegmentMember]
    members_sum: int | float
    total: int | float | None  # the total the filing reports for this concept and period
    total_scope: str | None  # what the total is: "all revenue", "Streaming revenue"
    difference: int | float | None  # total - members_sum
    check: Literal["sums to the total", "does not sum to the total", "no reported total"]
    note: str | None = None


class SegmentPeriod(Record):
    """One period's breakdowns from one filing."""

    ticker: str
    company_name: str | None = None
    period: Literal["annual", "quarterly"]
    fiscal_period: str  # "FY2022", "quarter ended 2023-09-30"
    start_date: str | None
    report_period: str  # the period's last day
    currency: str = "USD"
    form: str
    accession_number: str
    filing_date: str | None
    filing_url: str  # the filing's index page
    instance_url: str  # the XBRL instance read
    source: Source
    breakdowns: list[SegmentBreakdown]


def axis_kind(axis: str) -> AxisKind | None:
    """Which kind of breakdown an axis gives, or None for axes that are not segment tables.

    A company's own axis counts as its business-segment axis when named so
    (`msft:SegmentsAxis`, `xyz:ReportableSegmentsAxis`)."""
    prefix, _, local = axis.rpartition(":")
    if local in _STANDARD_AXES:
        return _STANDARD_AXES[local]
    if prefix not in _STANDARD_PREFIXES and local.endswith(("SegmentsAxis", "SegmentAxis")):
        return "business segment"
    return None


def _local(qname: str) -> str:
    return qname.rpartition(":")[2]


def _is_measure(concept: str) -> bool:
    prefix, _, local = concept.rpartition(":")
    if local in REVENUE_CONCEPTS or local == OPERATING_INCOME:
        return True
    # A company's own metrics on its segment axes (Netflix's paid memberships by region).
    return prefix not in _STANDARD_PREFIXES


def _span_days(start: str | None, end: str) -> int | None:
    if start is None:
        return None
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def _fits(fact: Fact, period: Literal["annual", "quarterly"]) -> bool:
    days = _span_days(fact.context.start, fact.context.end)
    if days is None:
        return True  # instants (memberships at year end) belong to the period ending that day
    return 340 <= days <= 380 if period == "annual" else 80 <= days <= 100


def member_label(qname: str, labels: Mapping[str, str]) -> str:
    """The company's label, else the standard one without "[Member]", else the QName's words."""
    text = labels.get(qname)
    if text:
        return text.removesuffix("[Member]").removesuffix("[Axis]").strip()
    prefix, _, local = qname.rpartition(":")
    if prefix == "country":
        return local
    words = local.removesuffix("Member").removesuffix("Axis")
    spaced = "".join(
        f" {c}" if c.isupper() and i and not words[i - 1].isupper() else c
        for i, c in enumerate(words)
    )
    return spaced.strip() or qname


def _measure_label(concept: str, labels: Mapping[str, str]) -> str:
    local = _local(concept)
    if local in REVENUE_CONCEPTS:
        return "Revenue"
    if local == OPERATING_INCOME:
        return "Operating income (loss)"
    return member_label(concept, labels)


# (concept, unit, start, end, members): the value reported for exactly those members.
_TotalKey = tuple[str, str, str | None, str, tuple[tuple[str, str], ...]]


def segment_periods(
    instance: Instance,
    labels: Mapping[str, str],
    *,
    period: Literal["annual", "quarterly"],
    limit: int,
    ticker: str,
    company_name: str | None,
    form: str,
    accession_number: str,
    filing_date: str | None,
    filing_url: str,
    instance_url: str,
) -> list[SegmentPeriod]:
    """Every period of `period` length in the filing that has segment facts, newest first."""
    facts = [f for f in instance.facts if _is_measure(f.concept) and not f.context.typed]
    totals: dict[_TotalKey, float] = {}
    grouped: dict[str, list[Fact]] = defaultdict(list)
    for fact in facts:
        members = _kept_members(fact.context.members)
        if members is None or not _fits(fact, period):
            continue
        key = (fact.concept, fact.unit, fact.context.start, fact.context.end, members)
        totals.setdefault(key, fact.value)
        if members:
            grouped[fact.context.end].append(fact)
    ends = sorted(grouped, reverse=True)
    durations = {e for e in ends if any(f.context.start for f in grouped[e])}
    source = Source(
        provider="SEC EDGAR",
        url=filing_url,
        form=form,
        accession_number=accession_number,
        filing_date=filing_date,
    )
    result: list[SegmentPeriod] = []
    for end in [e for e in ends if e in durations][:limit]:
        chosen = grouped[end]
        start = next((f.context.start for f in chosen if f.context.start), None)
        breakdowns = _breakdowns(chosen, totals, labels)
        if not breakdowns:
            continue
        result.append(
            SegmentPeriod(
                ticker=ticker,
                company_name=company_name,
                period=period,
                fiscal_period=_fiscal_label(instance, end, max(durations), period),
                start_date=start,
                report_period=end,
                form=form,
                accession_number=accession_number,
                filing_date=filing_date,
                filing_url=filing_url,
                instance_url=instance_url,
                source=source,
                breakdowns=breakdowns,
            )
        )
    return result


def _fiscal_label(
    instance: Instance, end: str, latest: str, period: Literal["annual", "quarterly"]
) -> str:
    """ "FY2024" or "Q2 FY2024" from the filing's own fiscal year (dei:DocumentFiscalYearFocus),
    counted back a year per comparative: a year ending in January or February is named by the
    filer, not by the calendar (a retailer's FY2023 ends 2024-02-03)."""
    years_back = round((date.fromisoformat(latest) - date.fromisoformat(end)).days / 365.25)
    if instance.fiscal_year is None:
        return f"FY{end[:4]}" if period == "annual" else f"quarter ended {end}"
    year = instance.fiscal_year - years_back
    quarter = instance.fiscal_period or ""
    if period == "quarterly" and quarter in ("Q1", "Q2", "Q3", "Q4"):
        return f"{quarter} FY{year}"
    return f"FY{year}" if period == "annual" else f"quarter ended {end}"


def _kept_members(members: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...] | None:
    """The context's members on segment axes, or None when it has any other dimension."""
    kept = []
    for axis, member in members:
        if (_local(axis), _local(member)) in _NEUTRAL:
            continue
        if axis_kind(axis) is None:
            return None
        kept.append((axis, member))
    return tuple(kept)


_GroupKey = tuple[str, str, str | None, str, str, tuple[tuple[str, str], ...], bool]


def _breakdowns(
    facts: Sequence[Fact],
    totals: Mapping[_TotalKey, float],
    labels: Mapping[str, str],
) -> list[SegmentBreakdown]:
    # Each fact can belong to one breakdown per axis it names; it goes to the breakdown with
    # the most members (Netflix's streaming-in-UCAN belongs to "streaming by region", not to a
    # one-member "UCAN by product").
    candidates: dict[_GroupKey, list[Fact]] = defaultdict(list)
    options: list[tuple[Fact, list[_GroupKey]]] = []
    for fact in facts:
        members = _kept_members(fact.context.members) or ()
        keys: list[_GroupKey] = []
        for axis, member in members:
            within = tuple(m for m in members if m[0] != axis)
            goods = _local(axis) == "ProductOrServiceAxis" and _local(member) in _GOODS_AND_SERVICES
            key = (
                fact.concept,
                fact.unit,
                fact.context.start,
                fact.context.end,
                axis,
                within,
                goods,
            )
            candidates[key].append(fact)
            keys.append(key)
        options.append((fact, keys))
    assigned: dict[_GroupKey, list[Fact]] = defaultdict(list)
    for fact, keys in options:
        best = max(
            keys,
            key=lambda k: (
                len(candidates[k]),
                -_AXIS_ORDER[axis_kind(k[4]) or "product or service"],
            ),
        )
        assigned[best].append(fact)
    result = _explain_gaps(
        [_breakdown(key, group, totals, labels) for key, group in assigned.items()]
    )
    return sorted(
        result,
        key=lambda b: (
            0
            if _local(b.concept) in REVENUE_CONCEPTS
            else 1
            if _local(b.concept) == OPERATING_INCOME
            else 2,
            b.concept,
            _AXIS_ORDER[b.axis_kind],
            len(b.within),
            -len(b.members),
        ),
    )


def _breakdown(
    key: _GroupKey,
    facts: Sequence[Fact],
    totals: Mapping[_TotalKey, float],
    labels: Mapping[str, str],
) -> SegmentBreakdown:
    concept, unit, start, end, axis, within, _goods = key
    kind = axis_kind(axis) or "business segment"
    members = sorted(
        (
            SegmentMember(
                member=dict(f.context.members)[axis],
                label=member_label(dict(f.context.members)[axis], labels),
                value=f.value,
            )
            for f in facts
        ),
        key=lambda m: -m.value,
    )
    total_of_all = totals.get((concept, unit, start, end, ()))
    total_within = totals.get((concept, unit, start, end, within)) if within else None
    total = total_within if total_within is not None else total_of_all
    within_members = [
        WithinMember(axis=a, member=m, label=member_label(m, labels)) for a, m in within
    ]
    within_text = ", ".join(w.label for w in within_members)
    measure = _measure_label(concept, labels)
    scope = (
        f"{within_text} {measure.lower()}" if total_within is not None else f"all {measure.lower()}"
    )
    members_sum = sum(m.value for m in members)
    difference: float | None = None
    if total is None:
        check = "no reported total"
        note: str | None = (
            f"The filing reports no total of {measure.lower()} for this period to check "
            "the members against; their sum is shown."
        )
    else:
        difference = _tidy(total - members_sum)
        adds_up = abs(difference) <= _tolerance(facts)
        check = "sums to the total" if adds_up else "does not sum to the total"
        note = _non_us_note(members, measure, total) if kind == "geography" else None
        if not adds_up:
            note = _gap_note(
                members,
                kind,
                within_text,
                measure,
                total_within is None and bool(within),
                difference,
                unit,
            )
    return SegmentBreakdown(
        measure=measure,
        concept=concept,
        axis=axis,
        axis_kind=kind,
        within=within_members,
        unit=unit,
        members=members,
        members_sum=_tidy(members_sum),
        total=total,
        total_scope=scope if total is not None else None,
        difference=difference,
        check=check,
        note=note,
    )


def _tidy(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 6)


def _tolerance(facts: Sequence[Fact]) -> float:
    """Rounding slack: each member is rounded to its `decimals` (half a unit of the last place)."""
    places = [f.decimals for f in facts if f.decimals is not None]
    if not places:
        return 0.0
    return len(facts) * 0.5 * 10.0 ** (-min(places))


def _amount(value: float, unit: str) -> str:
    if unit.upper() == "USD" and abs(value) >= 1e6 and value % 1_000_000 == 0:
        return f"{value / 1e6:,.0f}M USD"
    return f"{value:,.0f} {unit}"


def _gap_note(
    members: Sequence[SegmentMember],
    kind: str,
    within: str,
    measure: str,
    against_all: bool,
    difference: float,
    unit: str,
) -> str:
    gap = _amount(difference, unit)
    if against_all:
        return (
            f"These figures are {within} {measure.lower()} only, and the total is all "
            f"{measure.lower()}: the {gap} gap is {measure.lower()} outside {within}, which the "
            f"filing does not assign to any {kind}."
        )
    if len(members) == 1:
        return (
            f"Only {members[0].label} is tagged on this axis: the other {gap} is not broken "
            f"down by {kind} in the filing's XBRL."
        )
    if difference > 0:
        return (
            f"The members come to {_amount(difference, unit)} less than the reported total: "
            f"the filing assigns that part to no {kind} (a business outside this breakdown, "
            "corporate items or eliminations)."
        )
    return (
        f"The members come to {_amount(-difference, unit)} more than the reported total: the "
        f"difference is what the company keeps outside its {kind} figures (such as corporate "
        "costs, research and development or eliminations), which reduces the total."
    )


def _explain_gaps(breakdowns: list[SegmentBreakdown]) -> list[SegmentBreakdown]:
    """A gap that equals one member of another split of the same figure on the same axis is
    that member: Apple tags Services only as `us-gaap:ServiceMember`, in its products-and-
    services split, and its product lines (iPhone, Mac …) leave exactly Services over."""
    explained: list[SegmentBreakdown] = []
    for b in breakdowns:
        match = None
        if b.difference and b.check == "does not sum to the total":
            match = next(
                (
                    (other, m)
                    for other in breakdowns
                    if other is not b
                    and (other.concept, other.axis, other.unit, other.within)
                    == (b.concept, b.axis, b.unit, b.within)
                    for m in other.members
                    if m.value == b.difference and m.member not in {x.member for x in b.members}
                ),
                None,
            )
        if match is None:
            explained.append(b)
            continue
        member = match[1]
        note = (
            f"The {_amount(b.difference or 0, b.unit)} gap is {member.label} ({member.member}), "
            f"which the filing tags only in its other split of {b.measure.lower()} on this axis: "
            "with it, the members sum to the total."
        )
        explained.append(b.model_copy(update={"note": note}))
    return explained


def _non_us_note(members: Sequence[SegmentMember], measure: str, total: float) -> str | None:
    """`us-gaap:NonUsMember` beside other non-US members is the filer's "rest of world" line,
    not all non-US revenue: a reader adding it up as "international" would be wrong."""
    others = [m for m in members if _local(m.member) != _NON_US and m.member not in _US]
    rest = next((m for m in members if _local(m.member) == _NON_US), None)
    if rest is None or not others:
        return None
    non_us = sum(m.value for m in members if m.member not in _US)
    listed = ", ".join(m.label for m in others)
    return (
        f"'{rest.label}' is us-gaap:NonUsMember, which this filer uses for the countries not "
        f"listed ({listed} are shown separately), not for all non-US {measure.lower()}: non-US "
        f"{measure.lower()} is every member but the US, {_amount(non_us, 'USD')}"
        f" of {_amount(total, 'USD')}."
    )
