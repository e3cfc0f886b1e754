# C layout for the compiled hot path (scripts/compile.py); tasks.py is the source.
cimport cython

from squall.api.tuple cimport Tuple
from squall.runtime.acker cimport LedgerTable
from squall.runtime.collectors cimport BasicOutputCollector, OutputCollector, SpoutOutputCollector
from squall.runtime.host cimport Task, TaskHost
from squall.runtime.ids cimport u64
from squall.runtime.metrics cimport TaskMetrics
from squall.runtime.rotating cimport PendingTable


cdef str _CHECKPOINT

@cython.locals(s=str)
cpdef bint _is_checkpoint(object stream)

cdef class SpoutTask(Task):
    cdef public object spout
    cdef public SpoutOutputCollector collector
    cdef public PendingTable pending
    cdef public object max_pending
    cdef public list _ack_soon, _fail_soon, _completed_soon
    cdef public bint active
    cdef public object max_retries
    cdef public dict _failures
    cdef public object _fail_with_reason
    cdef public Py_ssize_t calls, idle_streak, _level1, _level2
    cdef public double idle_until, _level3
    cpdef bint can_emit(self)
    cpdef went_idle(self, double now)
    cpdef Py_ssize_t next_tuple(self)
    @cython.locals(m=TaskMetrics, pending=list)
    cpdef _run_acks_soon(self)
    @cython.locals(m=TaskMetrics, done=list, i=Py_ssize_t, latency=double, msg_id=object)
    cpdef _run_completed_soon(self)
    @cython.locals(n=Py_ssize_t)
    cpdef Py_ssize_t process(self, Py_ssize_t budget)
    @cython.locals(pending=PendingTable)
    cpdef handle(self, Tuple tup)
    @cython.locals(pending=PendingTable)
    cpdef _acked(self, u64 root)
    cpdef _tree_done(self, object msg_id, double latency)

cdef class BoltTask(Task):
    cdef public object bolt
    cdef public OutputCollector collector
    cdef public BasicOutputCollector _basic
    cdef public object barrier
    cdef public Py_ssize_t _sample_every
    cdef public Py_ssize_t _count
    cdef public object _batched
    cdef public object _bound_execute
    @cython.locals(n=Py_ssize_t)
    cpdef Py_ssize_t process(self, Py_ssize_t budget)
    @cython.locals(n=Py_ssize_t, basic=BasicOutputCollector, collector=OutputCollector, m=TaskMetrics, every=Py_ssize_t, tup=Tuple, checkpoints=bint)
    cpdef Py_ssize_t _process_basic(self, Py_ssize_t budget)
    @cython.locals(n=Py_ssize_t, m=TaskMetrics, every=Py_ssize_t, tup=Tuple, checkpoints=bint)
    cpdef Py_ssize_t _process_rich(self, Py_ssize_t budget)
    @cython.locals(n=Py_ssize_t, batch=list, tup=Tuple, checkpoints=bint)
    cpdef Py_ssize_t _process_batches(self, Py_ssize_t budget)
    @cython.locals(count=Py_ssize_t, step=Py_ssize_t, i=Py_ssize_t, tup=Tuple, m=TaskMetrics, t0=double, ms=double, each=double, fused0=double, host=TaskHost)
    cpdef execute_batch(self, list batch)
    @cython.locals(m=TaskMetrics, ms=double, host=TaskHost, t0=double, fused0=double, timed=bint)
    cpdef handle(self, Tuple tup)
    cdef _execute_basic(self, Tuple tup, double fused0)

cdef class AckerTask(Task):
    cdef public LedgerTable ledger
    cpdef handle(self, Tuple tup)
    @cython.locals(ledger=LedgerTable, i=Py_ssize_t, code=int, pairs="unsigned long long[::1]")
    cpdef apply(self, object stream, list v)
    @cython.locals(code=int)
    cpdef on_ack(self, u64 root, u64 value)
    @cython.locals(code=int)
    cpdef on_init(self, u64 root, u64 value, long long spout_task)
    @cython.locals(ledger=LedgerTable)
    cpdef _tell(self, int code, u64 root)
