"""rangeprof/experimental.py - Nsight Python's nsight.experimental: collect() marks a
function as a custom information collector for analyze.kernel(info_collectors=[...])."""
from rangeprof.info_collector import CollectionScope, canonical_scope

__all__ = ["collect", "CollectionScope"]


def collect(_func=None, *, scope):
    """@rangeprof.experimental.collect(scope=rangeprof.CollectionScope.RUN) on a function
    (or collect(func, scope="run")): its value becomes a column named after it. ONCE
    collectors take no arguments, CONFIG and RUN ones the config's arguments, ANNOTATION
    ones the annotation's name and then the config's arguments."""
    scope = canonical_scope(scope, "collect").value

    def decorator(func):
        if not callable(func):
            raise TypeError("collect can only decorate a callable")
        func._nsight_collector_scope = scope
        func._nsight_collector_name = func.__name__
        return func

    return decorator if _func is None else decorator(_func)
