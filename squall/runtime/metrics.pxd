# C layout for the compiled hot path (scripts/compile.py); metrics.py is the source.
cimport cython

cdef object _DEQUE_APPEND

cpdef int bucket_index(double ms)

cdef class TaskMetrics:
    cdef public object component, task
    cdef public long long emitted, transferred, acked, failed, executed
    cdef public double exec_sampled_ms
    cdef public long long exec_samples
    cdef public double process_ms
    cdef public long long process_samples
    cdef public double complete_ms
    cdef public long long complete_samples
    cdef public object complete_recent
    cdef public double capacity
    cdef public list complete_hist, exec_hist, process_hist
    cdef public long long _window_executed
    cdef public object user
    cdef public object outputs, inputs
    @cython.locals(recent=object)
    cpdef record_complete(self, double ms)
    cpdef record_execute(self, double ms, long long n)
    cpdef record_process(self, double ms)
    @cython.locals(inputs=dict, streams=dict, row=list)
    cpdef sample_input(self, object component, object stream, int kind, double ms)
