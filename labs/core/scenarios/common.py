"""What every lab's scenario module shares: the prediction option (labs.core.variants.Option)."""

from labs.core.variants import Option

__all__ = ["Option"]
