"""The lab kit (ledger, signing, live lecture, variants, widgets, charts, scenarios) on top of the
physics engine in labs.core.engine, whose public names it re-exports:

    from labs.core import Model, Cluster, Plan, estimate, sweep
"""

from labs.core.engine import CLUSTERS, ENGINE_VERSION, GPUS, LINKS, MODELS, Cluster, Estimate, Model, Plan, estimate, sweep

__all__ = ["CLUSTERS", "GPUS", "LINKS", "MODELS", "Cluster", "Model", "Plan", "Estimate", "estimate", "sweep", "ENGINE_VERSION"]
