# C layout for the compiled hot path (scripts/compile.py); rotating.py is the source.
cimport cython

from squall.runtime.roottable cimport RootTable


cdef class RotatingMap:
    cdef public list _buckets
    @cython.locals(bucket=dict)
    cpdef put(self, object key, object value)
    cpdef put_new(self, object key, object value)
    @cython.locals(bucket=dict)
    cpdef object get(self, object key, object default=*)
    @cython.locals(bucket=dict)
    cpdef object pop(self, object key, object default=*)
    @cython.locals(bucket=dict)
    cpdef bint touch(self, object key)
    cpdef dict rotate(self)

cdef class PendingTable(RootTable):
    cdef public Py_ssize_t _buckets
    cdef public long long _gen, _seq
    cdef public object msg_id
    cdef public double emitted_at
    cdef long long[::1] _gens, _seqs
    cdef double[::1] _times
    cdef list _ids
    cdef _columns(self, Py_ssize_t slots)
    @cython.locals(t=PendingTable)
    cdef _copy(self, RootTable src, Py_ssize_t s, Py_ssize_t d)
    @cython.locals(i=Py_ssize_t)
    cpdef put_new(self, unsigned long long root, object msg_id, double emitted_at)
    @cython.locals(i=Py_ssize_t)
    cpdef bint take(self, unsigned long long root)
    @cython.locals(i=Py_ssize_t)
    cpdef bint touch(self, unsigned long long root)
    @cython.locals(i=Py_ssize_t)
    cpdef list _order(self)
    @cython.locals(oldest=cython.longlong, i=Py_ssize_t, slots=list, order=list, expired=list)
    cpdef list rotate(self)
