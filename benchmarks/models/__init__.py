"""What Headroom stores. Django loads an app's models from `benchmarks.models`, so every model
is imported here from the module about its topic; everything else is imported from that module.
"""

from benchmarks.models.audit import AuditEvent
from benchmarks.models.capacity_records import CapacityPlan
from benchmarks.models.catalog import Checkpoint, Endpoint, EngineStart, Node, Runtime
from benchmarks.models.comparisons import Comparison, ExternalReference, OperatingPoint
from benchmarks.models.result_imports import ResultImport
from benchmarks.models.runs import Benchmark, Caveat, Point, PointData, Workload

__all__ = [
    "AuditEvent",
    "Benchmark",
    "CapacityPlan",
    "Caveat",
    "Checkpoint",
    "Comparison",
    "Endpoint",
    "EngineStart",
    "ExternalReference",
    "Node",
    "OperatingPoint",
    "Point",
    "PointData",
    "ResultImport",
    "Runtime",
    "Workload",
]
