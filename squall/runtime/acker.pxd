# C layout for the compiled hot path (scripts/compile.py); acker.py is the source.
cimport cython

from squall.runtime.rotating cimport RotatingMap


cdef class _Entry:
    cdef public object value
    cdef public object spout_task
    cdef public bint failed
    cdef public object seen
    cdef public object detail

cdef class AckerLedger:
    cdef public RotatingMap _pending
    cdef public Py_ssize_t duplicates
    @cython.locals(entry=_Entry)
    cpdef _Entry _entry(self, object root)
    @cython.locals(entry=_Entry)
    cpdef object init(self, object root, object value, object spout_task)
    @cython.locals(entry=_Entry, seen=set)
    cpdef object ack(self, object root, object value, bint once=*)
    @cython.locals(entry=_Entry)
    cpdef object fail(self, object root, object detail=*)
    cpdef object _settle(self, object root, _Entry entry)
