# C layout for the compiled hot path (scripts/compile.py); host.py is the source.
cimport cython

from squall.api.tuple cimport Tuple
from squall.runtime.ids cimport SplitMix64, u64
from squall.runtime.metrics cimport TaskMetrics

# clock_gettime(CLOCK_MONOTONIC), computed as CPython's time.monotonic (and, on Linux,
# time.perf_counter) compute it: nanoseconds, then seconds
cdef extern from *:
    """
    #ifndef SQUALL_MONOTONIC
    #define SQUALL_MONOTONIC
    #include <time.h>
    static double squall_monotonic(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)((long long)ts.tv_sec * 1000000000LL + (long long)ts.tv_nsec) / 1e9;
    }
    #endif
    """
    double _c_monotonic "squall_monotonic" ()

cdef class Task

cdef class AckScope:
    cdef public u64 root, acc
    cdef public bint open, leaked, hooked

cdef class TaskHost:
    cdef public object plan, clock, errors, tap
    cdef public bint timing
    cdef public double fused_secs
    cpdef double clock_now(self)
    cpdef deliver(self, object target, Task src, object stream, object values, object ids)
    cpdef deliver1(self, object target, Task src, object stream, object values, u64 root, u64 edge)
    cpdef verdict(self, object target, Task src, object root)
    cpdef buffer_ack(self, object acker, Task src, u64 root, u64 value)

cdef class Task:
    cdef public TaskHost host
    cdef public object task_id
    cdef public object component
    cdef public object context
    cdef public object conf
    cdef public object inbox
    cdef public dict out_fields
    cdef public dict _fields_map
    cdef public object _fields_stream, _fields
    cdef public object _popleft_of, _popleft
    cdef public TaskMetrics metrics
    cdef public object hooks
    cdef public list _ackers
    cdef public Py_ssize_t _num_ackers
    cdef public list _local_ackers
    cdef public list _local_slots
    cdef public bint acking
    cdef public SplitMix64 _root_ids
    cdef public bint inline
    cdef public list _open
    cdef public unsigned long owner
    cdef public AckScope scope
    cdef public bint _ack_hold, _ack_held
    cdef public u64 _held_root, _held_acc
    cdef dict __dict__
    cdef object __weakref__
    @cython.locals(out=dict)
    cdef object fields_of(self, object stream)
    cdef object inbox_popleft(self)
    @cython.locals(root=u64, base=u64, slot=u64, n=u64, top=u64)
    cpdef object new_root(self)
    cpdef object acker_for(self, u64 root)
    @cython.locals(scope=AckScope)
    cpdef send_ack(self, u64 root, u64 value)
    cpdef flush_ack(self)
    @cython.locals(acker=Task, i=Py_ssize_t)
    cdef _ack_now(self, u64 root, u64 value)
    @cython.locals(acker=Task, i=Py_ssize_t)
    cpdef send_init(self, u64 root, u64 value)
    cpdef on_ack(self, u64 root, u64 value)
    cpdef on_init(self, u64 root, u64 value, long long spout_task)
    cpdef Py_ssize_t process(self, Py_ssize_t budget)
    cpdef handle(self, Tuple tup)
