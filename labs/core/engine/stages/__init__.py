"""The step model's stages, each a function over plan columns (labs.core.engine.step runs them in order).

Every stage is written once over an array namespace (labs.core.engine.stages.xp): `sweep()` runs it on
numpy columns, `estimate()` on one plan's Python numbers.
"""
