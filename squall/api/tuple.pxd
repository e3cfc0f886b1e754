# C layout of the tuple for the compiled hot path (scripts/compile.py); tuple.py is the source.
cimport cython

cdef class MessageId:
    cdef public object anchors_to_ids

@cython.freelist(512)
cdef class Tuple:
    cdef public object values
    cdef public object fields
    cdef public object component
    cdef public object stream
    cdef public object task
    cdef public int _nroots
    cdef public unsigned long long _root, _edge
    cdef public object _idmap
    cdef public unsigned long long _ack_val
    cdef public bint _done
    cdef public double _t0

@cython.locals(t=Tuple)
cpdef Tuple new_tuple(object values, object fields, object component, object stream, object task, object ids)
@cython.locals(t=Tuple)
cpdef Tuple new_tuple1(object values, object fields, object component, object stream, object task, unsigned long long root, unsigned long long edge)
