"""Finetuning cells of a study side by side: ``jobs`` worker processes, the machine's cores split evenly.

Small models use two cores poorly: on 2 cores a bert-mini tagging step ran 1.57x faster with 2 threads than
with 1, so two 1-thread processes did 1.27x the work of one 2-thread process. Cells are independent (each
writes only its own directory), so the pretrained cell and its twin run together. Workers start with the
``spawn`` method (a fresh interpreter: no inherited threads or locks) and stay up for the process's later
studies, keeping their data caches between cells.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context

import torch

_POOLS: dict[tuple[int, int], ProcessPoolExecutor] = {}
PARENT_POLL = 1.0  # seconds between a worker's looks at its parent


def _start_worker(threads: int) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    torch.set_num_threads(threads)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A worker whose main process is gone (SIGTERM or kill -9 to it alone) exits within a second: left
    alone, it finished its cell and then waited for work forever. Its trial, left RUNNING, is failed and
    run again by the next search (study/search_storage.py)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)


def run_cells(work: list[tuple], jobs: int, call, finished) -> None:
    """Run ``call(*args)`` for every ``(key, args)`` in ``work``, ``jobs`` at a time; ``finished(key,
    result)`` in the main process as each ends. An error in a cell stops the others and is raised here."""
    if jobs <= 1:
        for key, args in work:
            finished(key, call(*args))
        return
    threads = max(1, torch.get_num_threads() // jobs)
    pool = _pool(jobs, threads)
    running: dict[Future, object] = {}
    queue = list(work)
    try:
        while queue or running:
            while queue and len(running) < jobs:
                key, args = queue.pop(0)
                running[pool.submit(call, *args)] = key
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                key = running.pop(future)
                finished(key, future.result())  # a worker's exception is raised here
    except BaseException:
        _POOLS.pop((jobs, threads), None)  # interrupted or failed: the next study starts fresh workers
        _stop(pool)
        raise


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop every worker now: waiting for them let a search's other worker run all its remaining trials
    (a worker's cell is its whole trial loop) before the error was said. A cell stopped mid-way has no
    finished marker and runs again on resume; a search's trial left RUNNING is failed and retried."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _pool(jobs: int, threads: int) -> ProcessPoolExecutor:
    pool = _POOLS.get((jobs, threads))
    if pool is None or getattr(pool, "_broken", False):
        pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"), initializer=_start_worker,
                                   initargs=(threads,))  # fmt: skip
        _POOLS[jobs, threads] = pool
    return pool


@atexit.register
def _shutdown() -> None:
    for pool in _POOLS.values():
        pool.shutdown(wait=True, cancel_futures=True)
    _POOLS.clear()
