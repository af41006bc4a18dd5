"""The batches of a corpus on their way to the tokenizer: cut (``batches``), read ahead in a thread
(``prefetched``), and encoded one batch ahead of the writing (``encoded_in_order``), so that neither the
reading nor the writing leaves the tokenizer's threads idle (benchmarks/prepare_rate.py)."""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor


def batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(texts)
    while batch := list(itertools.islice(it, size)):
        yield batch


def prefetched(batches: Iterator[list[str]], depth: int = 4) -> Iterator[list[str]]:
    """Read the next batches in a thread while the tokenizer (Rust, GIL released) encodes this one."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for b in batches:
                if stop.is_set():
                    return
                q.put(b)
            q.put(done)
        except BaseException as e:  # re-raised in the consumer
            q.put(e)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while (item := q.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.01)


def encoded_in_order(batches: Iterable[list[str]], tokenizer) -> Iterator[tuple[int, list[list[int]]]]:
    """(UTF-8 bytes of the batch, the ids of its non-blank documents) for each batch, in order. The next batch
    is encoded in a thread (Rust, the GIL released) while the caller writes this one: the Python work of
    turning encodings into ids and writing them no longer leaves the tokenizer's cores idle."""
    with ThreadPoolExecutor(1, thread_name_prefix="encode") as pool:
        pending = None
        for batch in batches:
            nbytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in batch if t)
            docs = [t for t in batch if t and not t.isspace()]
            job = (nbytes, pool.submit(tokenizer.encodings, docs) if docs else None)
            if pending is not None:
                yield _ids(pending)
            pending = job
        if pending is not None:
            yield _ids(pending)


def _ids(job) -> tuple[int, list[list[int]]]:
    nbytes, future = job
    return nbytes, [] if future is None else [e.ids for e in future.result()]
