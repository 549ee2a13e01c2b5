"""`swap_tensors`: two tensor objects trade everything they hold."""

import weakref


def swap_tensors(t1, t2):
    """Swap the classes, attributes and data of the objects `t1` and `t2`, so that every
    reference to one now sees what the other held. A weak reference to either would silently
    change what it points to, so either having one is an error."""
    for t, name in ((t1, "t1"), (t2, "t2")):
        if weakref.getweakrefs(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
