# C layout for the compiled hot path (scripts/compile.py); roottable.py is the source.
cimport cython

from squall.runtime.ids cimport u64

cdef Py_ssize_t MIN_SLOTS

cdef class RootTable:
    cdef u64 _mix, _umask
    cdef public Py_ssize_t _used
    cdef Py_ssize_t _slots, _mask, _shift
    cdef u64[::1] _keys
    cdef unsigned char[::1] _state
    @cython.locals(bits=Py_ssize_t)
    cdef _alloc(self, Py_ssize_t slots)
    cdef _columns(self, Py_ssize_t slots)
    cdef _copy(self, RootTable src, Py_ssize_t s, Py_ssize_t d)
    cdef inline Py_ssize_t _home(self, u64 root) noexcept
    @cython.locals(i=Py_ssize_t, mask=Py_ssize_t)
    cdef Py_ssize_t _slot(self, u64 root) noexcept
    cdef Py_ssize_t _claim(self, Py_ssize_t i, u64 root)
    @cython.locals(j=Py_ssize_t, k=Py_ssize_t, mask=Py_ssize_t, stays=bint)
    cdef Py_ssize_t _delete(self, Py_ssize_t i)
    @cython.locals(n=Py_ssize_t, s=Py_ssize_t, i=Py_ssize_t, old=RootTable)
    cdef _resize(self, Py_ssize_t slots)
    cdef _shrink(self)
