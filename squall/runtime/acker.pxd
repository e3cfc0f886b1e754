# C layout for the compiled hot path (scripts/compile.py); acker.py is the source.
cimport cython

from squall.runtime.ids cimport u64

cdef Py_ssize_t MIN_SLOTS
cdef unsigned char USED, FAILED, KNOWN, DETAIL, MORE_SEEN, SEEN_SHIFT
# the verdict codes stay Python ints: tasks.py imports them

cdef class AckerLedger:
    cdef public Py_ssize_t _buckets
    cdef public long long _gen
    cdef public Py_ssize_t duplicates
    cdef public long long task
    cdef public object detail
    cdef dict _details, _more_seen
    cdef u64 _mix, _umask
    cdef public Py_ssize_t _used
    cdef Py_ssize_t _slots, _mask, _shift
    cdef u64[::1] _keys, _vals, _seen0, _seen1
    cdef long long[::1] _gens, _tasks
    cdef unsigned char[::1] _state
    @cython.locals(bits=Py_ssize_t)
    cdef _alloc(self, Py_ssize_t slots)
    cdef inline Py_ssize_t _home(self, u64 root)
    @cython.locals(i=Py_ssize_t, mask=Py_ssize_t)
    cdef Py_ssize_t _slot(self, u64 root)
    @cython.locals(i=Py_ssize_t)
    cdef Py_ssize_t _entry(self, u64 root)
    cdef _move(self, Py_ssize_t src, Py_ssize_t dst)
    @cython.locals(state=cython.uchar, j=Py_ssize_t, k=Py_ssize_t, mask=Py_ssize_t, stays=bint)
    cdef _delete(self, Py_ssize_t i)
    @cython.locals(s=Py_ssize_t, i=Py_ssize_t, old=Py_ssize_t)
    cdef _resize(self, Py_ssize_t slots)
    @cython.locals(i=Py_ssize_t, state=cython.uchar)
    cpdef int init_code(self, u64 root, u64 value, long long spout_task)
    @cython.locals(i=Py_ssize_t, state=cython.uchar, n=cython.int)
    cpdef int ack_code(self, u64 root, u64 value, bint once)
    @cython.locals(i=Py_ssize_t, state=cython.uchar)
    cpdef int fail_code(self, u64 root, object detail)
    @cython.locals(i=Py_ssize_t)
    cpdef int reset_code(self, u64 root)
    @cython.locals(state=cython.uchar)
    cdef int _settle(self, Py_ssize_t i)
    @cython.locals(oldest=cython.longlong, i=Py_ssize_t)
    cpdef Py_ssize_t rotate(self)

cdef class AckBuffer:
    cdef u64 _mix, _umask
    cdef public Py_ssize_t _used
    cdef Py_ssize_t _slots, _mask, _shift
    cdef u64[::1] _keys, _vals
    cdef unsigned char[::1] _state
    cdef long long[::1] _order
    @cython.locals(bits=Py_ssize_t)
    cdef _alloc(self, Py_ssize_t slots)
    @cython.locals(i=Py_ssize_t)
    cdef Py_ssize_t _slot(self, u64 root)
    @cython.locals(i=Py_ssize_t)
    cpdef add(self, u64 root, u64 value)
    @cython.locals(k=Py_ssize_t, s=Py_ssize_t, i=Py_ssize_t, used=Py_ssize_t)
    cdef _grow(self)
    @cython.locals(k=Py_ssize_t, i=Py_ssize_t, n=Py_ssize_t, used=Py_ssize_t, out="unsigned long long[::1]")
    cpdef object drain(self)
