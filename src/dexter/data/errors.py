"""Data-layer errors: each says what happened and what to do about it."""

from __future__ import annotations

from collections.abc import Sequence

from dexter.errors import DexterError


class DataError(DexterError):
    """Base for every data failure shown to a person or a model."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint)


class NotFound(DataError):
    """The thing asked for does not exist at the source (ticker, concept, filing, item)."""


class UnknownCompany(NotFound):
    def __init__(self, query: str, suggestions: Sequence[str] = ()) -> None:
        self.query = query
        self.suggestions = list(suggestions)
        hint = (
            f"Did you mean: {', '.join(self.suggestions)}?"
            if self.suggestions
            else ("Check the ticker, or search by company name.")
        )
        super().__init__(f"No SEC filer matches {query!r}.", hint=hint)


class Unavailable(DataError):
    """No configured source offers this capability (e.g. prices without a price provider)."""


class ConfigurationNeeded(DataError):
    """A setting is required before this source can be used (user agent, API key)."""


class UpstreamError(DataError):
    """The source answered with an error or with something we could not understand."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        url: str | None = None,
        body: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.url = url
        self.body = body


class RateLimited(UpstreamError):
    """The source refused because of request volume, even after backing off."""
