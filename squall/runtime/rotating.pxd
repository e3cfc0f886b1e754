# C layout for the compiled hot path (scripts/compile.py); rotating.py is the source.
cimport cython


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

cdef Py_ssize_t MIN_SLOTS

cdef class PendingMap:
    cdef public Py_ssize_t _buckets
    cdef public long long _gen, _seq
    cdef public object msg_id
    cdef public double emitted_at
    cdef unsigned long long _mix, _umask
    cdef public Py_ssize_t _used
    cdef Py_ssize_t _slots, _mask, _shift
    cdef unsigned long long[::1] _keys
    cdef long long[::1] _gens, _seqs
    cdef double[::1] _times
    cdef unsigned char[::1] _state
    cdef list _ids
    @cython.locals(bits=Py_ssize_t)
    cdef _alloc(self, Py_ssize_t slots)
    cdef inline Py_ssize_t _home(self, unsigned long long root)
    @cython.locals(i=Py_ssize_t, mask=Py_ssize_t)
    cdef Py_ssize_t _slot(self, unsigned long long root)
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
    cdef _move(self, Py_ssize_t src, Py_ssize_t dst)
    @cython.locals(j=Py_ssize_t, k=Py_ssize_t, mask=Py_ssize_t, stays=bint)
    cdef _delete(self, Py_ssize_t i)
    @cython.locals(s=Py_ssize_t, i=Py_ssize_t, old=Py_ssize_t)
    cdef _resize(self, Py_ssize_t slots)
