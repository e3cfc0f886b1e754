# C layout for the compiled hot path (scripts/compile.py); routing.py is the source.
from squall.runtime.hashing cimport hash_values, stable_hash

cdef class ShuffleRouter:
    cdef public list _singles, _order
    cdef public Py_ssize_t _pos
    cdef public object _rng

cdef class LoadAwareShuffleRouter:
    cdef public ShuffleRouter _local, _all
    cdef public object _current, _local_targets, _mean_load
    cdef public double _high, _low
    cdef public Py_ssize_t _countdown
    cdef public bint local_scope

cdef class FieldsRouter:
    cdef public list _singles, _indexes
    cdef public Py_ssize_t _n

cdef class PartialKeyRouter:
    cdef public list _singles, _indexes, _sent
    cdef public Py_ssize_t _n

cdef class ConstantRouter:
    cdef public object _targets

cdef class CustomRouter:
    cdef public object _grouping, _task, _targets, _component

cdef class DirectOnly:
    cdef public object targets
