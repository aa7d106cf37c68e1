"""The registry of bias-discovery engines (``discovery.engines``), kept below the design.

The design asks it which configured engines call an LLM and which LLM sections their jobs open (the llm
engine's judge may have its own); the engines themselves, and their interface (``Engine``), live in
``rmexplain.discovery``, a package above the design, whose modules register into this registry (the lazy map
imports ``rmexplain.discovery.<name>`` on first use; plugins: entry-point group
``rmexplain.discovery_engines``). ``rmexplain.discovery.base`` hands it on as ``engines``.
"""

from __future__ import annotations

from typing import Any

from rmexplain.registry import Registry

BUILT_IN_ENGINES = ("offline", "llm")

engines: Registry[Any] = Registry(  # Registry[type[rmexplain.discovery.base.Engine]]
    "discovery.engines",
    {name: f"rmexplain.discovery.{name}" for name in BUILT_IN_ENGINES},
    group="rmexplain.discovery_engines",
    error=KeyError,
)
