"""The background compile worker: one child process that compiles the kernels of plans the
eager tier ran, into the disk kernel cache, while the user's process goes on.

A process, not a thread: Numba's compiler holds the GIL. The child is started with
``python -m lazysparse.engine.compile_worker`` (never by re-importing the user's script, as
``multiprocessing``'s spawn would) and speaks length-prefixed pickles over its stdin and
stdout (``compile_worker.read_frame``/``write_frame``): a job is ``(id, optimized plan)``, an
answer ``(id, ok, message)``. A writer thread feeds the child, a reader thread files its
answers, so submitting never blocks on a busy child. A job that outlives
:data:`JOB_TIMEOUT_S`, or a child that dies, fails its jobs: the caller then compiles in
process, so nothing waits on a lost child and no result depends on it.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, BinaryIO

from lazysparse.engine.compile_worker import lower_priority, read_frame, write_frame
from lazysparse.formats.compiled.sync import Counters

#: seconds a job may stay unanswered before it counts as failed (a hung compile)
JOB_TIMEOUT_S = 300.0

STATS = Counters("submitted", "done", "failed", "unpicklable", "started")


class JobState(Enum):
    """Where a background compile stands."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


@dataclass
class Job:
    """One plan sent to the worker; ``state`` is set by the reader thread."""

    id: int
    submitted: float = field(default_factory=time.monotonic)
    state: JobState = JobState.PENDING
    message: str = ""

    def current(self) -> JobState:
        """The job's state, a pending one past :data:`JOB_TIMEOUT_S` failed (timed out)."""
        if self.state is JobState.PENDING and \
                time.monotonic() - self.submitted > JOB_TIMEOUT_S:
            self.finish(False, f"no answer in {JOB_TIMEOUT_S:.0f} s")
            _restart_hung()
        return self.state

    def finish(self, ok: bool, message: str) -> None:
        """Record the answer once (a late answer after a timeout changes nothing)."""
        if self.state is JobState.PENDING:
            self.state = JobState.DONE if ok else JobState.FAILED
            self.message = message
            STATS.bump("done" if ok else "failed")


class _Worker:
    """The child process with its two feeding threads and its pending jobs."""

    def __init__(self) -> None:
        env = dict(os.environ, LAZYSPARSE_COMPILE="sync")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lazysparse.engine.compile_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env)
        lower_priority(self.proc.pid)  # before its imports: they cost a second of CPU
        self.owner = os.getpid()  # a forked child has the pipes but not the threads
        self.jobs: dict[int, Job] = {}
        self.outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        threading.Thread(target=self._write, args=(self.proc.stdin,), daemon=True,
                         name="lazysparse-compile-writer").start()
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True,
                         name="lazysparse-compile-reader").start()
        STATS.bump("started")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def submit(self, job: Job, payload: bytes) -> None:
        self.jobs[job.id] = job
        self.outbox.put(pickle.dumps((job.id, payload), protocol=pickle.HIGHEST_PROTOCOL))

    def _write(self, sink: BinaryIO) -> None:
        try:
            while (frame := self.outbox.get()) is not None:
                write_frame(sink, frame)
        except (OSError, ValueError):  # the child is gone: the reader fails the jobs
            pass
        finally:
            try:
                sink.close()
            except OSError:
                pass

    def _read(self, source: BinaryIO) -> None:
        try:
            while (frame := read_frame(source)) is not None:
                job_id, ok, message = pickle.loads(frame)
                job = self.jobs.pop(job_id, None)
                if job is not None:
                    job.finish(ok, message)
        except (OSError, EOFError, pickle.UnpicklingError):
            pass
        for job in list(self.jobs.values()):  # the child ended: nobody answers these
            job.finish(False, "the compile worker exited")
        self.jobs.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the child's input (it exits after its current job), kill it if it lingers."""
        self.outbox.put(None)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_WORKER: _Worker | None = None
_LOCK = threading.Lock()
_IDS = iter(range(1, sys.maxsize))


def _worker() -> _Worker | None:
    """The running worker of this process, started on first use (None when it cannot
    start); a process forked from one with a worker starts its own."""
    global _WORKER
    if _WORKER is None or _WORKER.owner != os.getpid() or not _WORKER.alive():
        try:
            _WORKER = _Worker()
        except OSError:
            return None
    return _WORKER


def submit(plan: Any) -> Job | None:
    """Send an optimized plan to the worker to compile its kernels; None when the plan
    cannot travel (an operator or datum that does not pickle) or no worker starts."""
    try:
        payload = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        STATS.bump("unpicklable")
        return None
    with _LOCK:
        worker = _worker()
        if worker is None:
            return None
        job = Job(next(_IDS))
        worker.submit(job, payload)
    STATS.bump("submitted")
    return job


def _restart_hung() -> None:
    """Kill a worker that let a job time out; the next submission starts a fresh one."""
    global _WORKER
    with _LOCK:
        worker, _WORKER = _WORKER, None
    if worker is not None:
        worker.proc.kill()


def shutdown() -> None:
    """Stop the worker (tests; the child also exits when this process does)."""
    global _WORKER
    with _LOCK:
        worker, _WORKER = _WORKER, None
    if worker is not None:
        worker.stop()


def wait(job: Job, timeout: float = JOB_TIMEOUT_S) -> JobState:
    """Block until ``job`` is answered or ``timeout`` passes (tests and ``warm``)."""
    end = time.monotonic() + timeout
    while job.current() is JobState.PENDING and time.monotonic() < end:
        time.sleep(0.01)
    return job.state
