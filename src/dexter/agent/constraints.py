"""Standing constraints: instructions the user gives once and expects to hold for the session.

"Use GAAP figures only", "report in EUR", "ignore fiscal 2020". They are pulled out as they are
said, kept in a short list that survives compaction and resume, and shown in the system prompt.
Cheap rules catch the common imperative phrasings; the fast model is asked only when a message
reads like an instruction the rules did not catch. Questions are never constraints: "What is
Apple's revenue in EUR?" asks for one figure, it does not change how every answer is written.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dexter.models.base import Model, complete_by_streaming
from dexter.models.errors import ModelError
from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    Usage,
    UserMessage,
)
from dexter.sentences import split_sentences

_log = logging.getLogger(__name__)

MAX_CONSTRAINTS = 20
MAX_CONSTRAINT_CHARS = 200

# ISO codes listed rather than any three letters, so "never buy in May" is not a currency rule.
_CODES = r"(?:usd|eur|gbp|jpy|chf|cny|rmb|cad|aud|nzd|hkd|inr|krw|sek|nok|dkk|sgd|brl|mxn|zar)"
_CURRENCY = (
    rf"(?:{_CODES}|euros?|dollars?|us dollars?|pounds?(?: sterling)?|yen|yuan|renminbi|"
    r"swiss francs?|francs?|rupees?|won)\b"
)
_BASIS = (
    r"(?:(?:non-)?gaap|ifrs|adjusted|reported|unadjusted|diluted|basic|audited|annual|quarterly)"
)

# Phrases that make the rest of the clause standing, wherever they appear in it.
_STANDING = re.compile(
    r"\b(?:from now on|going forward|henceforth|for the rest of (?:this|the) "
    r"(?:session|conversation|chat)|in all (?:future )?answers)\b,?",
    re.IGNORECASE,
)
_RULES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:always|never|only)\b(?!\s+mind\b)\s+\w+",
        r"^(?:don'?t|do not|stop)\s+(?:use|using|include|including|show|showing|report|"
        r"mention|consider|convert|round|give|count|cite|rely)\b",
        r"^(?:ignore|exclude|skip|disregard|avoid|omit)\s+(?!(?:that|this|it|me|my|the "
        r"(?:last|previous)|what|everything (?:i|above))\b)\w+",
        r"^(?:report|show|give|present|express|quote|state|convert)\s+(?:everything|"
        r"(?:all\s+)?(?:the\s+)?(?:figures|numbers|values|amounts|results|prices|financials))?"
        rf"\s*in\s+{_CURRENCY}$",
        rf"^use\s+(?:only\s+)?{_BASIS}(?:\s+\w+)?\s+(?:figures|numbers|data|metrics|accounts|"
        r"accounting|earnings|financials)(?:\s+only)?$",
        r"^use only\s+\w+",
        r"^(?:stick to|keep to|limit (?:yourself|it|answers|results) to|focus only on|"
        r"restrict (?:yourself|answers|results) to)\s+\w+",
        r"^no\s+(?!(?:thanks|thank you|problem|worries|idea|need|way|doubt|wonder|one)\b)"
        r"[a-z][\w-]*(?:\s+[a-z][\w-]*)?$",
    )
)
# Instruction-like words the rules may have missed; only then is the model worth asking.
_HINT = re.compile(
    r"\b(?:always|never|only|don'?t|do not|from now on|going forward|ignore|exclude|prefer|"
    r"make sure|remember|stop|avoid|instead of|rather than|"
    rf"stick to|unless|in {_CURRENCY})\b",
    re.IGNORECASE,
)
_LEADING_FILLER = re.compile(
    r"^(?:(?:please|pls|also|and|ok(?:ay)?|oh|so|but|then|btw|remember)\b[,:]?\s*)+",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"(?<=;)\s+")


def _normalise(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip().rstrip(".!;,: ")
    text = re.sub(r"[,\s]+please$", "", text, flags=re.IGNORECASE)
    if len(text) > MAX_CONSTRAINT_CHARS:
        text = text[:MAX_CONSTRAINT_CHARS].rstrip() + "…"
    return text[:1].upper() + text[1:]


def _clauses(text: str) -> Iterator[str]:
    """Each line's sentences, split again at semicolons; "Use U.S. GAAP" stays one clause."""
    for line in text.splitlines():
        for sentence in split_sentences(line):
            for clause in _CLAUSE_BREAK.split(sentence):
                clause = clause.strip()
                if clause and not clause.endswith("?"):
                    yield clause


def _rule_constraint(sentence: str) -> str | None:
    standing = _STANDING.search(sentence)
    if standing:
        after = sentence[standing.end() :].strip(" ,")
        before = sentence[: standing.start()].strip(" ,")
        clause = _LEADING_FILLER.sub("", after or before)
        return _normalise(clause) if clause else None
    clause = _LEADING_FILLER.sub("", sentence).rstrip(".!;,: ")
    clause = re.sub(r"[,\s]+please$", "", clause, flags=re.IGNORECASE)
    if any(rule.search(clause) for rule in _RULES):
        return _normalise(clause)
    return None


def extract_rule_constraints(text: str) -> list[str]:
    """Constraints stated in common imperative phrasings; questions and requests are ignored."""
    found = Constraints()
    for sentence in _clauses(text):
        constraint = _rule_constraint(sentence)
        if constraint:
            found.add(constraint)
    return list(found)


def _missed_instruction(text: str) -> bool:
    return any(
        _HINT.search(sentence) and _rule_constraint(sentence) is None for sentence in _clauses(text)
    )


_EXTRACT_SYSTEM = (
    "You find standing instructions in a user's message to a financial research assistant: "
    "rules meant to hold for the rest of the session, such as which accounting basis, currency, "
    "periods, sources or asset classes to use or avoid. A one-off question or request is not a "
    "standing instruction. Reply with a JSON array of short imperative strings, or [] if there "
    "are none. No other text."
)


_RETRY = (
    "That was not a JSON array. Reply with only a JSON array of short imperative strings, such "
    'as ["Use GAAP figures only"], or [] if the message sets no standing instruction.'
)
_FENCE = re.compile(r"^```[\w-]*\s*(.*?)\s*```$", re.DOTALL)


def parse_constraint_reply(text: str) -> list[str] | None:
    """The strings of a reply that is the JSON array asked for (in a code fence, or as
    `{"constraints": [...]}`, too); None for anything else. Prose is never read for bullets:
    a model that answers "Sure! - Always be helpful" has not said what the user asked for."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value: Any = json.loads(body)
    except ValueError:
        return None
    if isinstance(value, dict) and list(value) == ["constraints"]:
        value = value["constraints"]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return [item.strip() for item in value if item.strip()]


async def _ask_model(
    model: Model, text: str, on_usage: Callable[[Usage], None] | None
) -> list[str] | None:
    """The model's constraints for `text`; asked again once when its reply is not a JSON
    array; None when it still is not, or the call failed."""
    messages: list[Message] = [SystemMessage(_EXTRACT_SYSTEM), UserMessage(text)]
    for attempt in range(2):
        request = ModelRequest(messages=list(messages), max_output_tokens=300)
        try:
            response = await complete_by_streaming(model, request)
        except ModelError:
            return None
        if on_usage is not None:
            on_usage(response.usage)
        found = parse_constraint_reply(response.message.content)
        if found is not None:
            return found
        _log.debug("constraint model reply is not a JSON array (attempt %d)", attempt + 1)
        messages += [AssistantMessage(response.message.content), UserMessage(_RETRY)]
    return None


async def extract_constraints(
    text: str,
    model: Model | None,
    *,
    on_usage: Callable[[Usage], None] | None = None,
) -> list[str]:
    """Rule constraints, plus the fast model's when the text holds an instruction they missed.

    Never raises for a model failure or malformed output: the rules' result stands. A reply that
    is not the JSON array asked for is asked for once more; if the second is not one either,
    nothing the model said is kept. `on_usage` receives each model call's usage (for the ledger).
    """
    found = Constraints(extract_rule_constraints(text))
    if model is None or not _missed_instruction(text):
        return list(found)
    for item in await _ask_model(model, text, on_usage) or []:
        found.add(_normalise(item))
    return list(found)


_CURRENCY_RULE = re.compile(rf"\bin\s+{_CURRENCY}$", re.IGNORECASE)


def _key(text: str) -> str:
    return re.sub(r"[^\w]+", " ", text.casefold()).strip()


class Constraints:
    """An ordered, de-duplicated list of at most MAX_CONSTRAINTS; the oldest go first when full."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._items: list[str] = []
        for item in items:
            self.add(item)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"Constraints({self._items!r})"

    @property
    def items(self) -> tuple[str, ...]:
        return tuple(self._items)

    def add(self, text: str) -> bool:
        """Add a constraint; False if it was empty or already present."""
        text = _normalise(text)
        key = _key(text)
        if not key or any(_key(item) == key for item in self._items):
            return False
        if _CURRENCY_RULE.search(text):
            # A new reporting currency replaces the old one rather than contradicting it.
            self._items = [i for i in self._items if not _CURRENCY_RULE.search(i)]
        self._items.append(text)
        del self._items[:-MAX_CONSTRAINTS]
        return True

    def extend(self, items: Iterable[str]) -> list[str]:
        return [item for item in items if self.add(item)]

    def remove(self, matching: str) -> list[str]:
        """Remove every constraint containing `matching` (case-insensitive); return them."""
        needle = matching.casefold().strip()
        if not needle:
            return []
        removed = [i for i in self._items if needle in i.casefold()]
        self._items = [i for i in self._items if needle not in i.casefold()]
        return removed

    def clear(self) -> None:
        self._items.clear()

    def to_prompt(self) -> str | None:
        if not self._items:
            return None
        lines = [
            "## Standing Constraints",
            "",
            "The user set these for this session. Follow them in every step and answer unless "
            "the user changes them:",
            *(f"- {item}" for item in self._items),
        ]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(self._items, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Constraints:
        """Raises ValueError on anything but a JSON list of strings, so corruption is visible."""
        value = json.loads(text)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("constraints must be a JSON list of strings")
        return cls(value)
