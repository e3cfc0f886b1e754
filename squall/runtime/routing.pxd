# C layout for the compiled hot path (scripts/compile.py); routing.py is the source.
cimport cython

from squall.runtime.hashing cimport crc32_ascii, hash_values, stable_hash

cdef bint _COMPILED

cdef class RouterBase:
    cpdef list route(self, object values)

cdef class ShuffleRouter(RouterBase):
    cdef public list _singles, _order
    cdef public Py_ssize_t _pos
    cdef public object _rng
    @cython.locals(pos=Py_ssize_t)
    cpdef list route(self, object values)

cdef class LoadAwareShuffleRouter(RouterBase):
    cdef public ShuffleRouter _local, _all, _current
    cdef public object _local_targets, _mean_load
    cdef public double _high, _low
    cdef public Py_ssize_t _countdown
    cdef public bint local_scope
    cpdef list route(self, object values)

cdef class FieldsRouter(RouterBase):
    cdef public list _singles, _indexes, _groups, table
    cdef public Py_ssize_t _n, _index, _k
    @cython.locals(h="unsigned long long", index=Py_ssize_t, crc="long long")
    cpdef list route(self, object values)

cdef class PartialKeyRouter(RouterBase):
    cdef public list _singles, _indexes, _sent
    cdef public Py_ssize_t _n
    cpdef list route(self, object values)

cdef class ConstantRouter(RouterBase):
    cdef public object _targets
    cpdef list route(self, object values)

cdef class CustomRouter(RouterBase):
    cdef public object _grouping, _task, _targets, _component
    cpdef list route(self, object values)

cdef class DirectOnly:
    cdef public object targets
