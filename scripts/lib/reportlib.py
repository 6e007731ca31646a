"""Helpers shared by the report scripts (scripts/ofbench_report.py, eval/report.py) and the
evaluation harness (eval/eval.py): None-safe access to JSON that may lack any field, and exact
nearest-rank summaries. Standard library only."""
import math


def num(v):
    """A finite int/float, else None (bools, strings, NaN and infinities are 'no value')."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v if math.isfinite(v) else None


def dig(obj, *path):
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def as_list(v):
    return v if isinstance(v, list) else []


def as_dict(v):
    return v if isinstance(v, dict) else {}


def nearest_rank(sorted_vals, q):
    """The nearest-rank q-quantile (0 < q <= 1) of a non-empty sorted list."""
    n = len(sorted_vals)
    return sorted_vals[min(n, max(1, math.ceil(q * n))) - 1]


def summary(values, digits=None):
    """{n, p50, p90, p95, p99, max, mean} over the numeric values (exact nearest rank), each
    rounded to `digits` when given; every figure None when there is no value."""
    vals = sorted(v for v in (num(x) for x in values) if v is not None)
    if not vals:
        return {"n": 0, "p50": None, "p90": None, "p95": None, "p99": None, "max": None, "mean": None}
    r = (lambda x: x) if digits is None else (lambda x: round(x, digits))
    out = {"n": len(vals)}
    for p in (50, 90, 95, 99):
        out[f"p{p}"] = r(nearest_rank(vals, p / 100))
    out["max"] = r(vals[-1])
    out["mean"] = r(sum(vals) / len(vals))
    return out
