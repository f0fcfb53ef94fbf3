"""The course's thread policy, decided here once: the book, the grader and the tests all take it from here.

PyTorch runs its CPU kernels on an OpenMP thread pool (GNU libgomp, in PyTorch's wheels). By default a
thread that has finished its share of a parallel loop *spins* for a while, burning its core, before it
sleeps. On an idle machine that saves a few microseconds per loop; on a busy one the spinning threads
take the cores from the very work they wait for. Measured on the course's 2-core machine
(``benchmarks/threads.py``), the word2vec trainer on two threads with one busy single-threaded process
beside it: skip-gram 10.3 s and CBOW 9.7 s, against 4.0 s and 2.4 s with ``OMP_WAIT_POLICY=PASSIVE``
(waiting threads sleep at once). On the quiet machine waking them costs time: 2.6 s and 1.6 s by default,
3.0 s and 3.4 s passive; with one thread, the course's default, there is no thread to wake. A browser tab,
a second notebook or the grader's other kernel is such a busy process. So the policy is:

* **Wait policy: PASSIVE everywhere.** OpenMP reads ``OMP_WAIT_POLICY`` once, when torch loads it, so it
  must be in the environment before ``import torch``. Importing ``nlpcourse`` (or ``grader``) before torch
  puts it there (:func:`set_wait_policy`); the Makefile exports it for the book build, nbval and the tests;
  the grader gives it to every kernel (:func:`thread_env`). Chapters and assignments import ``nlpcourse``
  before ``torch`` so that a student's Jupyter gets it too.
* **Threads** (:data:`THREADS`): one wherever several jobs share the cores, which is everywhere in the
  course's own runs: a grading kernel (two are graded at once, one per core), the grader's judge beside
  them, a test in one of the two pytest workers, and a chapter's cells (so that its numbers are the same
  on every machine: a sum split over two threads rounds differently; and the book builds two chapters at
  once). The word2vec chapter, the one that trained on two threads, ran in 110 s on one against 122 s on
  two, alone on the machine, and 267 s on two beside another chapter.
* **BLAS** (numpy's and scipy's OpenBLAS) gets the same number of threads as torch (:func:`use_threads`,
  :func:`thread_env`): its idle threads spin too, and the wait policy does not reach them.
"""
from __future__ import annotations

import os
import sys

#: ``OMP_WAIT_POLICY``: idle OpenMP threads sleep at once instead of spinning.
WAIT_POLICY = "PASSIVE"

#: Variables that OpenMP and the BLAS libraries (numpy's and scipy's OpenBLAS, MKL) read when they load.
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: Threads torch and BLAS use in each place the course runs them.
THREADS = {
    "chapter": 1,  # a chapter's cells: the same numbers on every machine, and the book builds two chapters at once
    "kernel": 1,  # a grading kernel: the grader runs one per core
    "judge": 1,  # the grader's worker process, judging beside the kernels
    "test": 1,  # a test in one of the two pytest workers (tests/conftest.py, the one_thread fixture)
}


def thread_env(threads: int | None = None) -> dict[str, str]:
    """Environment variables that give a new process the policy: the wait policy, and ``threads`` threads
    for OpenMP and the BLAS libraries when given."""
    env = {"OMP_WAIT_POLICY": WAIT_POLICY}
    if threads is not None:
        env.update({name: str(threads) for name in BLAS_THREAD_VARIABLES})
    return env


def set_wait_policy() -> bool:
    """Put the wait policy into this process's environment (unless one is set already), in time for
    torch to read it if torch is not loaded yet. Returns whether the policy governs torch here: False when
    torch was imported before without it, in which case its OpenMP threads spin (restart the kernel and
    import ``nlpcourse`` first, or set ``OMP_WAIT_POLICY=PASSIVE`` before starting Jupyter)."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)
    return os.environ.get("OMP_WAIT_POLICY", "").upper() == WAIT_POLICY


def use_threads(place: str | int) -> int:
    """Set the threads of torch and of the BLAS libraries for ``place`` (a key of :data:`THREADS`) or to a
    number; return the number."""
    import torch

    from .errors import ConfigError, UnknownNameError

    if isinstance(place, str) and place not in THREADS:
        raise UnknownNameError(f"use_threads: no thread count for {place!r}; the places are {sorted(THREADS)}")
    n = THREADS[place] if isinstance(place, str) else place
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"use_threads: the number of threads must be a positive int, got {n!r}")
    torch.set_num_threads(n)
    _limit_blas(n)
    return n


def _limit_blas(n: int) -> None:
    """Give numpy's and scipy's BLAS ``n`` threads: those loaded already through threadpoolctl, those loaded
    later through the environment. Their pools (OpenBLAS's pthreads) spin while they wait, as OpenMP's do,
    and ``OMP_WAIT_POLICY`` does not reach them. With two of them the word2vec chapter, whose gensim
    evaluation multiplies with numpy, ran in 336 s beside one busy process; with one, 114 s (110 s alone),
    with the same outputs."""
    from threadpoolctl import threadpool_limits

    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(n)
    threadpool_limits(limits=n, user_api="blas")


set_wait_policy()  # on import: nlpcourse imports this module before anything that imports torch
