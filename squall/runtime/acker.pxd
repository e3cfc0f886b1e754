# C layout for the compiled hot path (scripts/compile.py); acker.py is the source.
cimport cython

from squall.runtime.ids cimport u64
from squall.runtime.roottable cimport RootTable

cdef unsigned char USED, FAILED, KNOWN, DETAIL, MORE_SEEN, SEEN_SHIFT
# the verdict codes stay Python ints: tasks.py imports them

cdef class LedgerTable(RootTable):
    cdef public Py_ssize_t _buckets
    cdef public long long _gen
    cdef public Py_ssize_t duplicates
    cdef public long long task
    cdef public object detail
    cdef dict _details, _more_seen
    cdef u64[::1] _vals, _seen0, _seen1
    cdef long long[::1] _gens, _tasks
    cdef _columns(self, Py_ssize_t slots)
    @cython.locals(t=LedgerTable)
    cdef _copy(self, RootTable src, Py_ssize_t s, Py_ssize_t d)
    @cython.locals(i=Py_ssize_t)
    cdef inline Py_ssize_t _entry(self, u64 root)
    cdef inline _drop(self, Py_ssize_t i)
    @cython.locals(i=Py_ssize_t, state=cython.uchar)
    cpdef int init_code(self, u64 root, u64 value, long long spout_task)
    @cython.locals(i=Py_ssize_t, state=cython.uchar, n=cython.int)
    cpdef int ack_code(self, u64 root, u64 value, bint once)
    @cython.locals(i=Py_ssize_t, state=cython.uchar)
    cpdef int fail_code(self, u64 root, object detail)
    @cython.locals(i=Py_ssize_t)
    cpdef int reset_code(self, u64 root)
    @cython.locals(state=cython.uchar)
    cdef inline int _settle(self, Py_ssize_t i)
    @cython.locals(oldest=cython.longlong, i=Py_ssize_t)
    cpdef Py_ssize_t rotate(self)

cdef class AckTable(RootTable):
    cdef u64[::1] _vals
    cdef long long[::1] _order, _rank
    cdef _columns(self, Py_ssize_t slots)
    @cython.locals(t=AckTable, k=Py_ssize_t)
    cdef _copy(self, RootTable src, Py_ssize_t s, Py_ssize_t d)
    @cython.locals(i=Py_ssize_t, k=Py_ssize_t)
    cpdef add(self, u64 root, u64 value)
    @cython.locals(k=Py_ssize_t, i=Py_ssize_t, n=Py_ssize_t, used=Py_ssize_t, out="unsigned long long[::1]")
    cpdef object drain(self)
