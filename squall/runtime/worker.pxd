# C layout for the compiled hot path (scripts/compile.py); worker.py is the source.
cimport cython

from squall.runtime.round cimport Round
from squall.runtime.transfer cimport Transfer

cdef class Worker(Transfer):
    cdef public object topology_name, topology, conf, timers, commands
    cdef public bint active
    cdef public Round round
    @cython.locals(fired=Py_ssize_t)
    cpdef Py_ssize_t run_once(self)
