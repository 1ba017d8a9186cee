"""What every lab's scenario module shares: the prediction option (labs.core.variants.Option),
and a per-setting cache that an unhashable input passes by."""

from labs.core.variants import Option

__all__ = ["Option", "cached_call"]


def cached_call(function, *args):
    """function(*args) through its functools cache when every argument hashes (a class repeats a
    few dozen settings under every student's variant); an unhashable one, which only a direct call
    can pass (the grader checks inputs first), goes to the function itself, so the caller hears the
    engine's own error rather than the cache's TypeError."""
    try:
        hash(args)
    except TypeError:
        return function.__wrapped__(*args)
    return function(*args)
