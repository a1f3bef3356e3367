"""_stream.py — non-blocking calls (ABI 1.4): Stream, the Future a submitted call returns, the
completion thread that settles futures, and the synchronous calls' submit-and-wait that Ctrl-C
cancels.

Threads. The plugin calls a completion callback on a thread of the stream (never the host's, never
under a clops lock). Ours, one ctypes callback for every event, only puts the event's key on a
queue: it takes the GIL for that put and nothing else, and never runs user code. A Python thread
of this module ("clops-completions", a daemon) takes the keys in order, reads each event's outcome
and settles its Future: set_result / set_exception / cancelled, which runs the Future's
done-callbacks (add_done_callback) on that thread. So user callbacks never run on a clops thread,
a slow one delays the other futures' callbacks but never the streams, and one that calls clops
(even waiting on another future) cannot deadlock the plugin.

Host memory. A submitted call reads and writes the host arrays it names until its event
completes: the Future holds them (and the ctypes descriptors pointing into them) until then.
Outputs are written at completion, and not at all when the call fails or is cancelled.
"""

import asyncio
import atexit
import concurrent.futures
import ctypes
import itertools
import queue
import threading
from ctypes import POINTER, byref, c_void_p

from ._abi import (EVENT_CANCELLED, EVENT_COMPLETE, ERR_INVALID_ARGUMENT, ERR_TIMEOUT, OK,
                   TENSOR_IN, TENSOR_KINDS, clops_arg, clops_buffer_copy_args,
                   clops_event_callback_args, clops_event_cancel_args,
                   clops_event_cl_args, clops_event_fn, clops_event_query_args,
                   clops_event_release_args, clops_event_wait_args, clops_stream_create_args,
                   clops_stream_release_args, clops_stream_wait_args, clops_submit_args)
from ._errors import Error, error_for

# A synchronous call waits in slices this long, so that the signal handler's KeyboardInterrupt
# is raised within one slice of Ctrl-C.
WAIT_SLICE_NS = 50 * 1000 * 1000


def _sized(struct_type, **members):
    return struct_type(struct_size=ctypes.sizeof(struct_type), **members)


def _handle(x):
    """An OpenCL object's handle: pyopencl's int_ptr, or the integer itself (None: NULL)."""
    return getattr(x, "int_ptr", x)


def _events(handles):
    """A C array of event (or cl_event) handles, and its length; (None, 0) when empty."""
    if not handles:
        return None, 0
    return (c_void_p * len(handles))(*handles), len(handles)


# ---- Raw handles: what Pool's synchronous calls use ------------------------------------------

def create_stream(lib, pool_handle, device, cl_queue):
    args = _sized(clops_stream_create_args, device=device, pool=pool_handle,
                  cl_queue=_handle(cl_queue))
    lib.check(lib.api.stream_create(byref(args)))
    return args.stream


def release_stream(lib, stream):
    """stream_release: waits for the calls submitted to it, then stops its threads."""
    lib.check(lib.api.stream_release(byref(_sized(clops_stream_release_args, stream=stream))))


def _query(lib, event):
    """(state, status, message, progress) of an event."""
    q = _sized(clops_event_query_args, event=event)
    lib.check(lib.api.event_query(byref(q)))
    return q.state, q.status, (q.message or b"").decode(errors="replace"), q.progress


def _error(lib, status, message):
    return error_for(status, message, lib.api.status_name(status).decode())


def _cancel(lib, event):
    lib.api.event_cancel(byref(_sized(clops_event_cancel_args, event=event)))


def _release_event(lib, event):
    lib.api.event_release(byref(_sized(clops_event_release_args, event=event)))


def run_interruptible(lib, stream, op, cargs, nargs):
    """A synchronous call (tensors of _pool.DIRECT_CALL_BYTES or more) as submit and wait: the
    wait is made in slices of WAIT_SLICE_NS, so that KeyboardInterrupt (the signal handler runs
    between them) or any exception raised while waiting cancels the call, waits for its end (its host memory is in use until then) and goes
    on. Raises the call's error, CLOPS_ERR_CANCELLED (ClopsCancelled) included."""
    api = lib.api
    args = _sized(clops_submit_args, op_index=api.op_index(op), stream=stream, args=cargs,
                  nargs=nargs, arg_size=ctypes.sizeof(clops_arg))
    events = (c_void_p * 1)()
    wait = _sized(clops_event_wait_args, count=1, events=events, timeout_ns=WAIT_SLICE_NS,
                  wait_all=1)
    try:
        lib.check(api.submit(byref(args)))
        events[0] = args.event
        while api.event_wait(byref(wait)) == ERR_TIMEOUT:
            pass
        state, status, message, _ = _query(lib, args.event)
    except BaseException:
        if args.event:
            _cancel(lib, args.event)
            events[0], wait.timeout_ns = args.event, -1
            api.event_wait(byref(wait))
        raise
    finally:
        if args.event:
            _release_event(lib, args.event)
    if status != OK:
        raise _error(lib, status, message)


# ---- Completions ------------------------------------------------------------------------------

_pending = {}  # key -> Future: submitted, not settled; holds the Future (and its arrays)
_keys = itertools.count(1)
_completed = queue.SimpleQueue()  # (key, event) of calls whose outcome is known
_dispatcher = None
_dispatcher_lock = threading.Lock()


def _on_complete(event, status, user):
    # On a clops thread, with the GIL ctypes took for us: hand over and return.
    _completed.put((user, event))


# One ctypes callback for every event, alive as long as the module (never collected under a
# stream thread that is about to call it).
_ON_COMPLETE = clops_event_fn(_on_complete)


def _dispatch():
    while True:
        key, event = _completed.get()
        future = _pending.pop(key, None)
        if future is not None:
            future._settle(event)


def _start_dispatcher():
    global _dispatcher
    with _dispatcher_lock:
        if _dispatcher is None:
            _dispatcher = threading.Thread(target=_dispatch, name="clops-completions",
                                           daemon=True)
            _dispatcher.start()


class Future(concurrent.futures.Future):
    """The outcome of a submitted call: a concurrent.futures.Future (concurrent.futures.wait,
    as_completed, add_done_callback, result(timeout), exception()) that asyncio can await
    (`await fut`, asyncio.gather, asyncio.wrap_future).

    result() is the function's result (clops.submit(clops.gemm, ...): the product), or, for an
    operator submitted by name, its output tensors as passed (one, or a tuple). A failed call
    raises its clops.Error (status, status_name, message); a cancelled one ClopsCancelled (a
    concurrent.futures.CancelledError) with the plugin's message.

    cancel() asks the call to stop (event_cancel) and returns True unless the future is done:
    a queued call never starts, a running one stops at its next unit of work, or completes if it
    was past its last. So cancelled() becomes True only when the outcome arrives, and a call
    cancelled too late completes normally. Done-callbacks run on the clops-completions thread.
    """

    def __init__(self, stream, finish, keep):
        super().__init__()
        self.stream, self._finish, self._keep = stream, finish, keep
        self._event, self._cancelled_error = None, None

    # -- the ABI's event --

    def _live_event(self):
        if not self._event:
            raise Error(ERR_INVALID_ARGUMENT, "the future's event was released")
        return self._event

    def cancel(self):
        if self.done():
            return self.cancelled()
        _cancel(self.stream.lib, self._live_event())
        return True

    def progress(self):
        """The fraction of the call done, 0 to 1 (1 once complete)."""
        return _query(self.stream.lib, self._live_event())[3]

    def state(self):
        """The event's state: clops.EVENT_QUEUED, _RUNNING, _COMPLETE, _FAILED or _CANCELLED."""
        return _query(self.stream.lib, self._live_event())[0]

    def cl_event(self):
        """The call's completion as a cl_event handle (an int) of the stream's context, retained
        for the caller: pyopencl.Event.from_int_ptr(h, retain=False) takes it over. It completes
        once the whole call has, host outputs written included."""
        args = _sized(clops_event_cl_args, event=self._live_event())
        self.stream.lib.check(self.stream.lib.api.event_cl_event(byref(args)))
        return args.cl_event

    # -- outcome --

    def result(self, timeout=None):
        try:
            return super().result(timeout)
        except concurrent.futures.CancelledError:
            if self._cancelled_error is not None:
                raise self._cancelled_error from None
            raise

    def exception(self, timeout=None):
        try:
            return super().exception(timeout)
        except concurrent.futures.CancelledError:
            if self._cancelled_error is not None:
                raise self._cancelled_error from None
            raise

    def __await__(self):
        return asyncio.wrap_future(self).__await__()

    def _settle(self, event):
        """On the completion thread: the outcome of the call, then the host memory let go."""
        lib = self.stream.lib
        try:
            state, status, message, _ = _query(lib, event)
        except Error as e:
            state, status, message = None, e.status, e.message
        finish, self._finish, self._keep = self._finish, None, None
        if state == EVENT_COMPLETE:
            try:
                value = finish()
            except BaseException as e:  # the function's own failure (a singular solve)
                self.set_exception(e)
            else:
                self.set_result(value)
        elif state == EVENT_CANCELLED:
            self._cancelled_error = _error(lib, status, message)
            concurrent.futures.Future.cancel(self)
            self.set_running_or_notify_cancel()  # wakes concurrent.futures.wait's waiters
        else:
            self.set_exception(_error(lib, status, message))

    def release(self):
        """Gives the event back (the future keeps its outcome); also done when the future is
        collected."""
        event, self._event = self._event, None
        if event:
            _release_event(self.stream.lib, event)

    def __del__(self):
        if getattr(self, "_event", None):
            try:
                self.release()
            except Exception:  # at interpreter exit, this module's globals may be gone
                pass


def _event_handles(futures):
    handles = []
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError("wait=: expected clops futures, got %s" % type(f).__name__)
        handles.append(f._live_event())
    return handles


class Stream:
    """An in-order queue of calls on one device of a pool (ABI 1.4): a call submitted to it
    starts after the ones submitted before it have completed, and sees their results; two
    streams run side by side, ordered only through events (wait=, wait_for). Release it (or use
    `with`): release waits for the calls submitted to it. Made by Pool.stream()."""

    def __init__(self, pool, device=0, queue=None):
        self.pool, self.lib, self.device = pool, pool.lib, device
        with pool._use() as handle:
            self.handle = create_stream(self.lib, handle, device, queue)
        pool._streams.add(self)

    def __repr__(self):
        return "<clops.Stream on device %d%s>" % (self.device,
                                                   "" if self.handle else ", released")

    def _live(self):
        if not self.handle:
            raise Error(ERR_INVALID_ARGUMENT, "the stream was released")
        return self.handle

    def submit(self, fn, *args, wait=(), cl_wait=(), **kwargs):
        """Submits a call and returns its Future at once. `fn` is an operator's name (then args
        and kwargs are Pool.invoke's, and the result is its output tensors) or one of the NumPy
        functions (clops.gemm, lu_factor, lu_solve, solve, transpose, mandelbrot, sum, ...; then
        they are that function's, pool= aside, and the result is its result). `wait`: Futures
        (of this pool's streams) that must complete first (a failed or cancelled one cancels
        this call); `cl_wait`: cl_events (pyopencl.Event or handles) of the stream's context
        its device work waits for. A call refused by its checks raises here and runs nothing."""
        if isinstance(fn, str):
            call = named_call(self.pool, fn, args, kwargs)
        elif callable(getattr(fn, "prepare", None)):
            call = fn.prepare(*args, pool=self.pool, **kwargs)
        else:
            raise TypeError("submit: %r is neither an operator's name nor a clops function" % (fn,))
        return self.submit_call(call, wait, cl_wait)

    def submit_call(self, call, wait=(), cl_wait=()):
        """Submits a prepared Call (see _pool.Call); what submit() does after the arguments."""
        lib, pool = self.lib, self.pool
        op = lib.find(call.op)
        keep = [call]
        with pool._use():
            cargs, nargs = pool.arguments(call.op, call.kwargs, keep)
            waits, wait_count = _events(_event_handles(wait))
            cl_waits, cl_wait_count = _events([_handle(e) for e in cl_wait])
            keep += [waits, cl_waits]
            future = Future(self, call.finish, keep)
            key = next(_keys)
            args = _sized(clops_submit_args, op_index=lib.api.op_index(op),
                          stream=self._live(), args=cargs, nargs=nargs,
                          arg_size=ctypes.sizeof(clops_arg), wait_count=wait_count,
                          cl_wait_count=cl_wait_count, on_complete=_ON_COMPLETE, user=key)
            if waits is not None:
                args.wait_events = ctypes.cast(waits, POINTER(c_void_p))
            if cl_waits is not None:
                args.cl_wait_events = ctypes.cast(cl_waits, POINTER(c_void_p))
            _start_dispatcher()
            _pending[key] = future  # before submit: the callback may come before it returns
            status = lib.api.submit(byref(args))
            if status != OK:
                del _pending[key]
                lib.check(status)
            future._event = args.event
        return future

    def copy(self, src, dst, src_offset=0, dst_offset=0, nbytes=None, wait=()):
        """Copies `nbytes` (None: the rest of src from src_offset) from Buffer `src` to Buffer
        `dst`, both of this pool (created or wrapped), as a call on the stream (buffer_copy):
        after the calls submitted before it and the Futures in `wait`. Returns its Future at
        once, whose result is `dst`. Overlapping ranges of one buffer are refused here."""
        lib, pool = self.lib, self.pool
        api = lib.table("buffer_copy")
        if nbytes is None:
            nbytes = src.size - src_offset
        with pool._use():
            waits, wait_count = _events(_event_handles(wait))
            future = Future(self, lambda: dst, [src, dst, waits])
            key = next(_keys)
            args = _sized(clops_buffer_copy_args, stream=self._live(), src=src._live(),
                          src_offset=src_offset, dst=dst._live(), dst_offset=dst_offset,
                          bytes=nbytes, wait_count=wait_count)
            if waits is not None:
                args.wait_events = ctypes.cast(waits, POINTER(c_void_p))
            _start_dispatcher()
            _pending[key] = future  # before the callback is registered: it may run at once
            status = api.buffer_copy(byref(args))
            if status != OK:
                del _pending[key]
                lib.check(status)
            future._event = args.event
            # buffer_copy takes no callback: registered now (it still runs once, on a thread of
            # the stream, when the copy has already ended).
            callback = _sized(clops_event_callback_args, event=args.event, fn=_ON_COMPLETE,
                              user=key)
            status = api.event_on_complete(byref(callback))
            if status != OK:
                del _pending[key]
                future.release()
                lib.check(status)
        return future

    def wait_for(self, *futures):
        """Calls submitted to this stream from now on start after `futures` completed (a failed
        or cancelled one cancels them)."""
        handles, count = _events(_event_handles(futures))
        args = _sized(clops_stream_wait_args, stream=self._live(), events=handles,
                      event_count=count)
        self.lib.check(self.lib.api.stream_wait(byref(args)))

    def release(self):
        """Waits for the calls submitted to the stream, then releases it (their futures stay
        valid and settle as usual)."""
        handle, self.handle = self.handle, None
        if handle:
            self.pool._streams.discard(self)
            release_stream(self.lib, handle)

    close = release

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        if getattr(self, "handle", None):
            self.release()


def named_call(pool, name, args, kwargs):
    """The Call of operator `name` with Pool.invoke's arguments, whose result is its output
    tensors (kind out or inout) as passed: the one, or a tuple in the descriptor's order."""
    from ._pool import Call  # _pool imports this module
    _, kwargs = pool.bind(name, args, kwargs)
    outputs = [kwargs[p.name] for p in pool.lib.op(name).params
               if p.kind in TENSOR_KINDS and p.kind != TENSOR_IN and
               kwargs.get(p.name) is not None]

    def finish():
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
    return Call(pool, name, kwargs, finish)


def _cancel_pending_at_exit():
    """At interpreter exit, before threads stop taking the GIL: cancels the calls still pending
    and waits for their outcomes, so that no completion callback comes after finalization."""
    for future in list(_pending.values()):
        try:
            future.cancel()
        except Error:
            pass
    for future in list(_pending.values()):
        event = future._event
        if event:
            events = (c_void_p * 1)(event)
            wait = _sized(clops_event_wait_args, count=1, events=events, timeout_ns=10 ** 10,
                          wait_all=1)
            future.stream.lib.api.event_wait(byref(wait))


atexit.register(_cancel_pending_at_exit)
