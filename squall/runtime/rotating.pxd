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
