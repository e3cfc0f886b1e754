# C layout for the compiled hot path (scripts/compile.py); ids.py is the source.
cimport cython

ctypedef unsigned long long u64

cdef class SplitMix64:
    cdef u64 _s, _gamma, _m1, _m2, _mask
    @cython.locals(mask=u64, s=u64, z=u64)
    cpdef u64 next(self)

cdef class RandomIds(SplitMix64):
    cpdef u64 next(self)
