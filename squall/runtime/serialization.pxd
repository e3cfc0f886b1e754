# C layout for the compiled hot path (scripts/compile.py); serialization.py is the source.

cdef class Encoder:
    cdef public object _packer
    cpdef bytes pack(self, list message)
    cpdef bytes pack_frame(self, list batches)

cpdef list messages_of(object data)
