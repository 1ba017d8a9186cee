"""The lab kit (ledger, signing, live lecture, variants, widgets, charts, scenarios) on top of the
physics engine in labs.core.engine, whose public names it re-exports:

    from labs.core import Model, Cluster, Plan, estimate, sweep
"""

__all__ = ["CLUSTERS", "GPUS", "LINKS", "MODELS", "Cluster", "Model", "Plan", "Estimate", "estimate", "sweep", "ENGINE_VERSION"]


def __getattr__(name: str):
    """The engine's names read through labs.core.engine when first asked for (PEP 562): `from labs.core
    import ui` imports the kit's module and what it needs, not the whole engine first."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from labs.core import engine

    value = getattr(engine, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
