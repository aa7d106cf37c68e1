"""The one reading of the ``figures`` config section: width in inches, resolution, file format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rmexplain.settings import schema_defaults


@dataclass(frozen=True)
class FigureOptions:
    """Output options of every figure (config ``figures``; defaults from the schema)."""

    width: float
    dpi: int
    format: str

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> FigureOptions:
        """From the ``figures`` section, or the params dict a rule passes (missing keys: the defaults)."""
        values = {**schema_defaults("figures"), **(section or {})}
        return cls(float(values["width"]), int(values["dpi"]), str(values["format"]))

    def as_params(self) -> dict[str, Any]:
        """The options as a rule passes them to its script (``params.figures``)."""
        return asdict(self)
