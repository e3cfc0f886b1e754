# C layout for the compiled hot path (scripts/compile.py); round.py is the source.
cimport cython

from squall.runtime.host cimport Task, _c_monotonic
from squall.runtime.tasks cimport SpoutTask


cdef class RoundConfig:
    cdef public Py_ssize_t capacity, high, low, spout_batch
    cdef public double spout_budget, batch_time, bolt_budget

cdef class Round:
    cdef public object exchange, now, trace
    cdef public Py_ssize_t capacity, high, low, spout_batch, spout_cursor
    cdef public double bolt_budget, spout_budget, batch_time, io_at
    cdef public list processors, spouts, barrier_spouts, queues, offloop, aligners, holders
    cdef public bint throttled, blocked, can_hold, in_bolts, was_held
    cdef public Py_ssize_t rounds, work_done, early_sends, throttled_rounds, held_rounds, overflow_rounds
    cdef dict __dict__
    @cython.locals(task=Task, spout=SpoutTask, work=Py_ssize_t, handled=Py_ssize_t, room=Py_ssize_t, begun=double, deadline=double, deferred=bint)
    cpdef double time(self)
    cpdef Py_ssize_t run(self, bint active)
    @cython.locals(spout=SpoutTask, work=Py_ssize_t)
    cpdef Py_ssize_t gate_spouts(self, bint active, bint blocked, Py_ssize_t fullest, bint deferred=*)
    @cython.locals(done=Py_ssize_t, n=Py_ssize_t, taken=Py_ssize_t)
    cpdef Py_ssize_t process(self, Task task)
    @cython.locals(room=Py_ssize_t, n=Py_ssize_t)
    cpdef Py_ssize_t exchange_now(self)
    cpdef bint holding(self)
    @cython.locals(room=Py_ssize_t)
    cpdef Py_ssize_t room(self)
    @cython.locals(task=Task, fullest=Py_ssize_t, n=Py_ssize_t)
    cpdef Py_ssize_t fullest(self)
    @cython.locals(fullest=Py_ssize_t, n=Py_ssize_t)
    cpdef Py_ssize_t pressure(self)
    @cython.locals(spout=SpoutTask, emitted=Py_ssize_t, n=Py_ssize_t, count=Py_ssize_t, k=Py_ssize_t, start=Py_ssize_t, now=double, deadline=double)
    cpdef Py_ssize_t run_spouts(self)
