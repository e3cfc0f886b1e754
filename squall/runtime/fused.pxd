# C layout for the compiled hot path (scripts/compile.py); fused.py is the source.
cimport cython

from squall.api.tuple cimport Tuple, new_tuple, new_tuple1
from squall.runtime.host cimport AckScope, Task, TaskHost
from squall.runtime.ids cimport u64
from squall.runtime.tasks cimport BoltTask

cdef class ChainHost(TaskHost):
    cdef public TaskHost host
    cdef public object stream
    cdef public object target
    cdef public Task task
    cdef public BoltTask bolt_task
    cdef public AckScope scope
    @cython.locals(task=Task, scope=AckScope, tup=Tuple, t0=double)
    cpdef deliver(self, object target, Task src, object stream, object values, object ids)
    @cython.locals(task=Task, scope=AckScope, tup=Tuple, t0=double)
    cpdef deliver1(self, object target, Task src, object stream, object values, u64 root, u64 edge)
    cpdef verdict(self, object target, Task src, object root)
    cpdef buffer_ack(self, object acker, Task src, u64 root, u64 value)
