# C layout for the compiled hot path (scripts/compile.py); worker.py is the source.
cimport cython

from squall.api.tuple cimport Tuple, new_tuple
from squall.runtime.serialization cimport Encoder, messages_of
from squall.runtime.tasks cimport AckerTask, SpoutTask, Task

cdef class Timer:
    cdef public double due
    cdef public double interval
    cdef public object action

cdef class Worker:
    cdef public object topology_name, topology, conf, plan, index, transport, errors, clock, tap
    cdef public bint active
    cdef public dict tasks
    cdef public list spouts, processors, threads
    cdef public object _task_worker
    cdef public Encoder _encoder
    cdef public dict _out, _unsent, _acks
    cdef public object _ack_src
    cdef public Py_ssize_t _batch, _capacity, _high, _low, _max_tuple
    cdef public list _barrier_spouts
    cdef public bint throttled
    cdef public dict _fields, _sources
    cdef public list _timers
    cdef public object _commands
    cdef public bint _running, _graceful
    cdef public object _thread, started, stopped, start_error
    cdef public Py_ssize_t corrupt_frames, misrouted, rounds, idle_rounds, work_done, _spout_cursor
    cdef public double _spout_budget
    cdef dict __dict__
    @cython.locals(task=Task, acker=AckerTask)
    cpdef deliver(self, object target, Task src, object stream, object values, object ids)
    @cython.locals(task=Task, acker=AckerTask, tasks=dict, sources=dict, n=Py_ssize_t)
    cpdef Py_ssize_t _receive(self, Py_ssize_t room)
    @cython.locals(task=Task, spout=SpoutTask, timer=Timer, work=Py_ssize_t)
    cpdef Py_ssize_t run_once(self)
    @cython.locals(task=Task, fullest=Py_ssize_t, n=Py_ssize_t)
    cpdef Py_ssize_t _fullest(self)
    @cython.locals(spout=SpoutTask, emitted=Py_ssize_t, n=Py_ssize_t, count=Py_ssize_t, k=Py_ssize_t, start=Py_ssize_t, now=double, deadline=double)
    cpdef Py_ssize_t _run_spouts(self)
    @cython.locals(acks=dict, pending=dict, flat=list)
    cpdef _send_acks(self)
    @cython.locals(acks=dict)
    cpdef buffer_ack(self, object acker, Task src, object root, object value)
