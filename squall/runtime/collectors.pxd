# C layout for the compiled hot path (scripts/compile.py); collectors.py is the source.
cimport cython

from squall.api.tuple cimport Tuple
from squall.runtime.ids cimport SplitMix64, u64
from squall.runtime.metrics cimport TaskMetrics
from squall.runtime.host cimport AckScope, Task, TaskHost
from squall.runtime.rotating cimport PendingTable
from squall.runtime.routing cimport RouterBase

from cpython.ref cimport Py_REFCNT as _c_refcnt

cdef extern from "pythread.h":
    unsigned long _c_thread_id "PyThread_get_thread_ident" ()

cdef unsigned long _thread_id()

cdef bint _reuse_lists

cdef inline list _private(list values, Py_ssize_t temp_refs)

cdef class StreamRoute:
    cdef public object stream
    cdef public Py_ssize_t arity
    cdef public list routers
    cdef public RouterBase single
    cdef public object direct
    cdef public long long emitted, transferred

cdef class _Emitter:
    cdef public Task _task
    cdef public dict _routes
    cdef public TaskHost _host
    cdef public TaskMetrics _metrics
    cdef public object _component
    cdef public SplitMix64 _edges
    cdef public object _last_stream
    cdef public StreamRoute _last_route
    @cython.locals(route=StreamRoute, single=RouterBase)
    cpdef tuple _route(self, object stream, object values)

cdef class SpoutOutputCollector(_Emitter):
    cdef public PendingTable _pending
    cdef public list acks_soon, fails_soon, completed_soon
    cdef public Py_ssize_t _sample_every, _sample_left
    @cython.locals(task=Task, host=TaskHost, edges=SplitMix64, ack_val=u64, edge=u64, root=u64, n=Py_ssize_t, scope=AckScope, emitted_at=double, left=Py_ssize_t)
    cpdef _send(self, StreamRoute route, list values, list targets, object msg_id)

cdef class OutputCollector(_Emitter):
    cdef public bint _acking, _direct_ack
    cdef public list _held
    @cython.locals(route=StreamRoute, single=RouterBase, vals=list, targets=list)
    cpdef list emit(self, object values, object anchors=*, object stream=*)
    @cython.locals(task=Task, host=TaskHost, anchor=Tuple, edges=SplitMix64, acc=u64, edge=u64, root=u64, nroots=int, n=Py_ssize_t)
    cpdef _send(self, StreamRoute route, list values, list targets, object anchors)
    @cython.locals(task=Task, m=TaskMetrics, nroots=int, extra=u64, value=u64, ms=double)
    cpdef ack(self, Tuple tup)
    cpdef fail(self, Tuple tup)
    @cython.locals(tup=Tuple)
    cpdef release(self, list tuples, bint ok)

cdef class BasicOutputCollector:
    cdef public OutputCollector _collector
    cdef public object input
