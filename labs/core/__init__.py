"""The physics engine and lab kit. Public names:

    from labs.core import Model, Cluster, Plan, estimate, sweep
"""

from labs.core.hardware import CLUSTERS, GPUS, LINKS, Cluster
from labs.core.models import MODELS, Model
from labs.core.perf import Estimate, estimate
from labs.core.plan import Plan
from labs.core.search import sweep

ENGINE_VERSION = "0.1.0"

__all__ = ["CLUSTERS", "GPUS", "LINKS", "MODELS", "Cluster", "Model", "Plan", "Estimate", "estimate", "sweep", "ENGINE_VERSION"]
