# C layout for the compiled hot path (scripts/compile.py); transfer.py is the source.
cimport cython

from squall.api.tuple cimport Tuple, new_tuple, new_tuple1
from squall.runtime.acker cimport AckTable
from squall.runtime.host cimport Task, TaskHost
from squall.runtime.ids cimport u64
from squall.runtime.serialization cimport Encoder, messages_of
from squall.runtime.tasks cimport AckerTask, SpoutTask

cdef class _Peer:
    cdef public Py_ssize_t index, count
    cdef public list batches

cdef class _Batch:
    cdef public object target
    cdef public Task src
    cdef public object stream
    cdef public list values
    cdef public object idbuf
    cdef u64[::1] ids
    cdef public Py_ssize_t nids
    cdef public object others
    cdef public bint tracked
    cdef public _Peer peer
    cdef _room(self, Py_ssize_t need)
    cdef _track_from(self, Py_ssize_t index)
    @cython.locals(n=Py_ssize_t)
    cpdef add1(self, Py_ssize_t index, u64 root, u64 edge)
    cpdef add_other(self, Py_ssize_t index, object ids)
    cpdef object wire_ids(self)

cdef Py_ssize_t _PLAIN_CHARS, _LARGE
cdef object _DEQUE_APPEND

@cython.locals(size=Py_ssize_t)
cpdef bint _plain(list values)

cdef class Transfer(TaskHost):
    cdef public object index, transport
    cdef public dict tasks
    cdef public object _task_worker
    cdef public Encoder _encoder
    cdef public list _peers
    cdef public Py_ssize_t _slots
    cdef public dict _unsent, _acks
    cdef public bint _acks_due
    cdef public object _ack_src
    cdef public Py_ssize_t _batch, _max_tuple
    cdef public dict _sources
    cdef public list _appends, _inline
    cdef public Py_ssize_t corrupt_frames, unsendable_frames, misrouted
    cdef public Py_ssize_t sent_frames, sent_bytes, sent_tuples, sent_acker
    cdef public Py_ssize_t send_bound, unsent_peak
    cdef public bint held, _announced
    cdef public set _pressure
    cdef dict __dict__
    @cython.locals(task=Task, acker=AckerTask, batch=_Batch, size=Py_ssize_t, slot=Py_ssize_t)
    cpdef deliver(self, object target, Task src, object stream, object values, object ids)
    @cython.locals(task=Task, acker=AckerTask, batch=_Batch, size=Py_ssize_t, slot=Py_ssize_t)
    cpdef deliver1(self, object target, Task src, object stream, object values, u64 root, u64 edge)
    @cython.locals(task=Task, inbox=object)
    cpdef verdict(self, object target, Task src, object root)
    @cython.locals(opens=list, batch=_Batch, peer=_Peer, slot=Py_ssize_t)
    cpdef _Batch _batch_to(self, object target, Task src, object stream)
    cpdef _added(self, _Peer peer, Py_ssize_t size)
    @cython.locals(peer=_Peer, batches=list, wire=list, batch=_Batch, acker=Py_ssize_t, tuples=Py_ssize_t, n=Py_ssize_t)
    cpdef _flush(self, Py_ssize_t index)
    @cython.locals(tasks=dict, sources=dict, n=Py_ssize_t)
    cpdef Py_ssize_t receive(self, Py_ssize_t room)
    @cython.locals(task=Task, acker=AckerTask, count=Py_ssize_t, i=Py_ssize_t, vals=list, tuples=list, view="unsigned long long[::1]")
    cpdef Py_ssize_t _take_batch(self, list batch, dict tasks, dict sources)
    @cython.locals(buf=AckTable)
    cpdef _send_acks(self)
    @cython.locals(buf=AckTable)
    cpdef buffer_ack(self, object acker, Task src, u64 root, u64 value)
    cpdef bint send(self)
    @cython.locals(peer=_Peer, blocked=bint, held=bint, bound=Py_ssize_t)
    cpdef bint _flush_all(self)
