# C declarations for the compiled hot path (scripts/compile.py); hashing.py is the source.
cimport cython

cdef bint _COMPILED

cpdef object stable_hash(object value)
cpdef object hash_values(object values)
@cython.locals(crc="long long")
cpdef object _hash_str(str value)
@cython.locals(poly=cython.uint, full=cython.uint, crc=cython.uint, b=cython.uchar, _k=cython.int)
cpdef cython.uint crc32_bytes(bytes data)
cdef unsigned int _CRC_TABLE[256]
@cython.locals(full=cython.uint, crc=cython.uint, b=cython.uint, ch="Py_UCS4")
cpdef long long crc32_ascii(str value)
