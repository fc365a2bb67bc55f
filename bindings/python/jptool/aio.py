"""jptool.aio: a jptool registry or VFS host driven by the running asyncio loop.

:class:`AsyncRegistry` wraps a :class:`jptool.Registry` and puts it on the
loop the way registry.h asks a host's loop to: the registry's fd is watched
for reading (``loop.add_reader``) and each time it is readable the registry
is dispatched once; after every dispatch a timer is re-armed from
``jpt_registry_get_timeout`` (``loop.call_later``), and a dispatch that
reports more work ready runs again on the next loop iteration
(``loop.call_soon``) rather than in a loop, so other tasks run between. No
thread, and no polling: nothing runs while the registry has nothing to do.

Awaiting: ``await registry.call(name, arguments)`` runs one call;
``registry.submit(calls)`` gives an :class:`AsyncBatch`, and ``await
batch.results()`` resolves once every call has its result (``await
registry.wait(batch, timeout_ms)`` as :meth:`jptool.Registry.wait` does,
with a bound); ``async for
event in registry.events()`` yields the registry's events as they come and
ends once the registry is closed; ``await registry.aclose()`` ends every
tool without blocking the loop (``jpt_registry_shutdown``, dispatching
until every process is reaped) and then frees the registry.

Inquiries: the handler given to :meth:`AsyncRegistry.set_inquiry_handler`
may be a coroutine function (or any function returning an awaitable). It
runs as a task; when it returns, what it returned is the answer
(:meth:`jptool.Inquiry.answer`), unless it answered or cancelled the
inquiry itself. A handler that raises cancels the inquiry with its error,
as does an answer the question's schema refuses; cancelling the task
cancels the inquiry. A plain function works as in :mod:`jptool`. Builtin
tools' callbacks (:meth:`AsyncRegistry.add_builtin`) are plain functions,
as in :mod:`jptool`; :meth:`jptool.Handle.update` may be called later from
a task. So is the output handler (:meth:`AsyncRegistry.set_output_handler`),
which sees each piece of a tool's output in order, inside a dispatch; to
hand it to a coroutine, put it on an :class:`asyncio.Queue`.

VFS tools' policy prompt: the handler given to
:meth:`AsyncRegistry.set_policy_handler` or
:meth:`AsyncVfsHost.set_policy_handler` may be a coroutine function too;
what it returns is the decision (``JPT_DECISION_ALLOW``,
``JPT_DECISION_ALLOW_ALWAYS``, ``JPT_DECISION_DENY``, True or False),
unless it answered the :class:`jptool.PolicyRequest` itself. The tool waits
meanwhile, told ``pending``. A handler that raises, returns None or
something else, or is cancelled, denies the request.

:class:`AsyncVfsHost` puts a standalone :class:`jptool.VfsHost` on the loop
the same way: ``await host.wait()`` gives the tool's final state, ``await
host.aclose()`` cancels a tool still running and frees the host without
blocking the loop.

Exceptions: one raised by a callback (a builtin's, the output handler's,
a plain inquiry or policy handler's, a coroutine handler's, or an answer
or decision it
returned that was refused) cannot cross the C library or the loop's
callbacks. It is raised
by the first ``await`` on the registry that is under way or next begins
(:meth:`AsyncRegistry.call`, :meth:`AsyncBatch.wait`,
:meth:`AsyncBatch.results`, the events iterator; or
:meth:`AsyncRegistry.aclose`, once the registry is freed), once, as
:mod:`jptool`'s driving calls raise them. A dispatch that fails
(JPT_ERR_IO: the epoll fd failed) stops the driving: every await on the
registry raises that error from then on, and :meth:`AsyncRegistry.aclose`
frees the registry the blocking way.

Cancellation: cancelling ``await registry.call(...)`` cancels the call
(``jpt_batch_cancel``: a one-shot child is killed, a spawn or apply answers
at once with its handle left running); cancelling ``await
batch.results()`` only stops waiting, the batch runs on. One call of a
batch is cancelled with :meth:`AsyncBatch.cancel_call`, and given a
host-side time limit with :meth:`AsyncBatch.set_call_timeout`.

Every method of the blocking classes has its form here (a test,
test/python/test_aio.py, enumerates them), but for the loop integration
that this module does itself (``fileno``, ``timeout``, ``dispatch``,
``wakeup``) and :meth:`jptool.Registry.run`: wait for the batches you
submitted instead. :meth:`jptool.Registry.shutdown` is
:meth:`AsyncRegistry.aclose`, :meth:`jptool.VfsHost.run` is
:meth:`AsyncVfsHost.wait`.

Use one AsyncRegistry per registry, from the thread that runs its loop
(jptool's threading rule: that thread must outlive the handles), made
inside a coroutine (it binds to the running loop), and close it with
:meth:`AsyncRegistry.aclose` or ``async with``: until then the loop keeps
it alive. The blocking methods of the wrapped :class:`jptool.Registry`
(:meth:`~jptool.Registry.wait`, :meth:`~jptool.Registry.run`,
:meth:`~jptool.Registry.call`) still work but hold up the loop while they
poll; use the awaitable ones.

Example::

    import asyncio, jptool.aio

    async def ask_user(inquiry):
        return await ui.prompt(inquiry.question["text"])   # the answer

    async def main():
        async with jptool.aio.AsyncRegistry() as r:
            r.load_tools({"tools": [{"name": "sh", "stateful": True,
                                     "command": ["sh"]}]})
            r.set_inquiry_handler(ask_user)
            content, is_error = await r.call("sh", {"action": "spawn",
                                                    "id": "shell"})
            batch = r.submit(model_message["tool_calls"])
            results = await batch.results("openai")

    asyncio.run(main())

A VFS tool with a policy prompt answered from a coroutine::

    async def may_write(request):              # a jptool.PolicyRequest
        return await ui.confirm(f"{request.tool}: {request.reason}")

    async def edit():
        async with jptool.aio.AsyncVfsHost(root="project") as host:
            host.set_policy_handler(may_write)
            host.spawn(["python3", "edit_tool.py"],
                       {"name": "edit", "arguments": {"path": "src/main.c"}})
            with await host.wait() as state:
                print(state.render())
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import sys
import traceback
import weakref
from typing import (Any, AsyncIterator, Awaitable, Callable, Coroutine, Deque, Dict,
                    List, Optional, Set, Tuple, Type, TypeVar, Union)

from . import (JPT_DECISION_ALLOW, JPT_DECISION_DENY, JPT_ERR_CANCELLED, JPT_ERR_INVALID,
               JPT_ERR_STATE, JPT_ERR_TIMEOUT,
               Batch, Files, Handle, Inquiry, JptError, PolicyRequest, Registry, State,
               VfsHost)
from ._lib import lib as _lib
from ._util import _from_c, _Text, _to_c

__all__ = ["AsyncRegistry", "AsyncBatch", "AsyncVfsHost"]

# An inquiry handler: a plain function, or one whose awaitable result is
# the answer.
InquiryHandler = Callable[[Inquiry], Union[None, Awaitable[Any]]]

# A policy handler: a plain function, or one whose awaitable result is the
# decision (a JPT_DECISION_* value, or True / False).
PolicyHandler = Callable[[PolicyRequest], Union[None, Awaitable[Any]]]


class _Waiter:
    """One await under way: its future is resolved when ``ready()`` is
    true after a dispatch, or at once when something all awaits must see
    happens (an exception to raise, the registry closed)."""

    __slots__ = ("ready", "future")

    def __init__(self, ready: Callable[[], bool], future: "asyncio.Future[None]"):
        self.ready = ready
        self.future = future


_Driven = TypeVar("_Driven", Registry, VfsHost)


def _adopt(owner: str, noun: str, kind: Type[_Driven], given: Optional[_Driven],
           options: Dict[str, Any]) -> Tuple[_Driven, bool]:
    """What an async wrapper named `owner` drives, and whether it made it:
    `given` (a `kind` no other wrapper drives), or a new ``kind(**options)``."""
    if given is None:
        return kind(**options), True
    if options:
        raise TypeError(f"{owner}: give a {kind.__name__} or the options of a new one, "
                        "not both")
    if not isinstance(given, kind):
        raise TypeError(f"{owner}: {noun} must be a jptool.{kind.__name__}, not "
                        f"{type(given).__name__}")
    if given._driver is not None:
        raise RuntimeError(f"{owner}: this {noun} is driven by another {owner} already")
    return given, False


class _LoopDriver:
    """What puts a library object with a loop fd on the asyncio loop: the fd
    watched with ``add_reader``, one dispatch each time it is readable, the
    timer re-armed from the object's timeout after each, a dispatch that
    reports more work run again with ``call_soon``. The awaits under way
    wait in ``_waiters`` and are woken after each dispatch. Subclasses say
    how to dispatch, read the timeout, take a callback's exception and tell
    whether the object is still open."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int):
        self._loop = loop
        self._fd = fd
        self._timer: Optional[asyncio.TimerHandle] = None
        self._soon: Optional[asyncio.Handle] = None
        self._waiters: List[_Waiter] = []
        self._pending: List[BaseException] = []  # for the next await to raise
        self._failure: Optional[JptError] = None  # dispatch failed: not driven
        self._closed = False
        self._tasks: Set["asyncio.Task[None]"] = set()  # coroutine handlers

    # -- what subclasses provide --

    def _alive(self) -> bool:
        raise NotImplementedError

    def _dispatch_once(self) -> int:
        raise NotImplementedError

    def _take_callback_exception(self) -> Optional[BaseException]:
        raise NotImplementedError

    def _dispatch_error(self, rc: int) -> JptError:
        raise NotImplementedError

    def _get_timeout(self) -> int:
        raise NotImplementedError

    # -- what the loop runs --

    def _drive(self) -> None:
        """Dispatches once: the fd is readable, the timer is due, or the
        last dispatch had more work ready."""
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if self._closed or self._failure is not None:
            return
        if not self._alive():
            # Closed behind this object's back: its fd is gone, so stop
            # watching it.
            self._detach()
            self._closed = True
            self._wake(everyone=True)
            return
        rc = self._dispatch_once()
        exc = self._take_callback_exception()
        if exc is not None:
            self._raise_later(exc)
        if rc < 0:
            # JPT_ERR_IO: the epoll fd failed. Watching it again would fail
            # again at once; every await learns why instead.
            self._failure = self._dispatch_error(rc)
            self._detach()
            self._wake(everyone=True)
            return
        self._wake()
        self._rearm(more=rc > 0)

    def _kick(self) -> None:
        """Dispatches on the next loop iteration: a call made outside a
        dispatch may have started timers or queued output."""
        if self._soon is None and not self._closed and self._failure is None:
            self._soon = self._loop.call_soon(self._drive)

    def _rearm(self, more: bool) -> None:
        """Schedules the next dispatch that no fd activity will ask for:
        at once when work is ready, else when the object's next timer is
        due, else none."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        ms = self._get_timeout()
        if more or ms == 0:
            if self._soon is None:
                self._soon = self._loop.call_soon(self._drive)
        elif ms > 0:
            self._timer = self._loop.call_later(ms / 1000, self._drive)

    def _detach(self) -> None:
        """Stops watching the fd and drops the scheduled dispatches."""
        self._loop.remove_reader(self._fd)
        for handle in (self._timer, self._soon):
            if handle is not None:
                handle.cancel()
        self._timer = self._soon = None

    def _wake(self, everyone: bool = False) -> None:
        for w in self._waiters:
            if not w.future.done() and (everyone or w.ready()):
                w.future.set_result(None)

    def _raise_later(self, exc: BaseException) -> None:
        """Keeps an exception a callback raised for the first await to
        raise, and wakes every await so that one under way does."""
        if self._pending:
            # Only the first is raised; later ones are reported at once,
            # as jptool's driving calls do.
            print(f"jptool.aio: another exception in a callback of "
                  f"{type(self).__name__}:", file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            return
        self._pending.append(exc)
        self._wake(everyone=True)

    async def _until(self, ready: Callable[[], bool], raise_pending: bool = True) -> None:
        """Returns once ``ready()`` is true or the object is closed; raises
        a callback's exception (with ``raise_pending``) or the dispatch
        failure."""
        while True:
            if raise_pending and self._pending:
                exc = self._pending.pop()
                raise exc
            if self._failure is not None:
                raise self._failure
            if self._closed or ready():
                return
            w = _Waiter(ready, self._loop.create_future())
            self._waiters.append(w)
            try:
                await w.future
            finally:
                self._waiters.remove(w)

    def _run_task(self, coro: Coroutine[Any, Any, None]) -> None:
        """Runs a coroutine handler's task; the driver cancels those still
        running when it closes."""
        task: "asyncio.Task[None]" = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _policy_handler(self, fn: PolicyHandler) -> Callable[[PolicyRequest], None]:
        """The plain handler that runs ``fn`` and, when it returns an
        awaitable, decides the request with what that gives."""
        decide = fn

        def handler(request: PolicyRequest) -> None:
            result = decide(request)
            if inspect.isawaitable(result):
                self._run_task(_decide(request, result, self._raise_later))

        return handler


def _running_loop(what: str, blocking: str) -> asyncio.AbstractEventLoop:
    """The running loop that ``what`` binds to; RuntimeError saying what to
    do when none runs (asyncio's own "no running event loop" does not)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"jptool.aio.{what}() was made outside a coroutine: it binds to the running "
            f"asyncio loop, and none runs here. Make it inside the coroutine that uses it "
            f"(async def main(): async with jptool.aio.{what}(...) as r: ...; then "
            f"asyncio.run(main())), or use jptool.{blocking} for blocking calls") from None


class AsyncRegistry(_LoopDriver):
    """A :class:`jptool.Registry` driven by the running asyncio loop (see
    the module's docstring for how, and what it promises).

    ``AsyncRegistry(**options)`` makes a new registry with the keyword
    options of :class:`jptool.Registry`; ``AsyncRegistry(registry)`` drives
    one made already (its tools, builtins and inquiry handler stay). Call it
    inside a coroutine: it binds to the running loop (RuntimeError
    otherwise, saying so). Raises what :class:`jptool.Registry` raises, TypeError for
    both a registry and options, ValueError for a closed registry, and
    RuntimeError for a registry another AsyncRegistry drives.

    :attr:`registry` is the wrapped :class:`jptool.Registry`.
    """

    def __init__(self, registry: Optional[Registry] = None, **options: Any):
        loop = _running_loop("AsyncRegistry", "Registry")
        registry, made_here = _adopt("AsyncRegistry", "registry", Registry, registry, options)
        super().__init__(loop, registry.fileno())  # ValueError when closed
        self._registry = registry
        # The AsyncBatch of each Batch still open, by id(Batch), for events.
        self._batches: "weakref.WeakValueDictionary[int, AsyncBatch]" = \
            weakref.WeakValueDictionary()
        self._events: Deque[Dict[str, Any]] = collections.deque()
        self._event_readers = 0  # events() iterators open
        try:
            loop.add_reader(self._fd, self._drive)
        except BaseException:
            if made_here:
                registry.close()
            raise
        registry._driver = self
        self._rearm(more=False)

    # -- the driver's hooks --

    def _alive(self) -> bool:
        return self._registry._live()

    def _dispatch_once(self) -> int:
        reg = self._registry
        if not reg._ptr:  # as the library answers NULL (_drive checked _alive())
            return JPT_ERR_INVALID
        with reg._busy():
            return _lib.jpt_registry_dispatch(reg._ptr)

    def _take_callback_exception(self) -> Optional[BaseException]:
        reg = self._registry
        if not reg._pending:
            return None
        exc = reg._pending.pop()
        reg._pending.clear()
        return exc

    def _dispatch_error(self, rc: int) -> JptError:
        return self._registry._error(rc)

    def _get_timeout(self) -> int:
        ptr = self._registry._ptr
        return _lib.jpt_registry_get_timeout(ptr) if ptr else JPT_ERR_INVALID

    def _check_open(self) -> Registry:
        if self._closed:
            raise ValueError("operation on a closed AsyncRegistry")
        return self._registry

    # -- lifetime --

    @property
    def registry(self) -> Registry:
        """The wrapped :class:`jptool.Registry`."""
        return self._registry

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` (or :meth:`close`) has freed the
        registry."""
        return self._closed

    @property
    def errmsg(self) -> str:
        """:attr:`jptool.Registry.errmsg`: the message of the last failed
        call on the registry, or ""."""
        return self._check_open().errmsg

    async def aclose(self) -> None:
        """Ends every tool and frees the registry without blocking the
        loop: ``jpt_registry_shutdown`` (calls in flight are cancelled, tool
        processes get SIGTERM and past the kill grace SIGKILL, builtin
        handles their abort callback), dispatching until every process is
        reaped (the "shutdown" event is then queued, and an events iterator
        still open gets it last), then ``jpt_registry_free``, which returns
        at once. Awaits still under way raise JptError(JPT_ERR_CANCELLED);
        coroutine inquiry handlers still running are cancelled. If this
        await is itself cancelled, the registry is freed at once the
        blocking way (up to the kill grace). Raises an exception a callback
        raised meanwhile (once the registry is freed). Closing twice is
        harmless."""
        if self._closed:
            return
        reg = self._registry
        try:
            if self._failure is None and reg._live() and not reg.shutdown():
                await self._until(self._shutdown_done, raise_pending=False)
        finally:
            self._free()
        if self._pending:
            raise self._pending.pop()

    def _shutdown_done(self) -> bool:
        return self._registry.shutdown()

    def close(self) -> None:
        """Frees the registry the blocking way (``jpt_registry_free``):
        returns once every child is reaped, which may hold up the loop for
        the kill grace. Prefer :meth:`aclose`. Closing twice is harmless."""
        if self._closed:
            return
        self._free()
        if self._pending:
            raise self._pending.pop()

    def _free(self) -> None:
        if self._closed:
            return
        self._closed = True
        reg = self._registry
        if self._event_readers and reg._live():
            # The events the iterators have not read yet outlive the C queue.
            self._events.extend(self._adopt(e) for e in reg.events())
        self._detach()
        for task in self._tasks:
            task.cancel()
        try:
            reg.close()
        finally:
            reg._driver = None
            self._wake(everyone=True)

    async def __aenter__(self) -> "AsyncRegistry":
        """Returns the registry; the ``async with`` block closes it with
        :meth:`aclose`."""
        self._check_open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        if self._closed:
            return "<jptool.aio.AsyncRegistry closed>"
        return f"<jptool.aio.AsyncRegistry fd={self._fd}>"

    # -- tools (as jptool.Registry) --

    def load_tools(self, config: Union[Dict[str, Any], _Text], replace: bool = False) -> None:
        """:meth:`jptool.Registry.load_tools`."""
        self._check_open().load_tools(config, replace)

    def tools(self, dialect: Union[str, int] = "openai", flat: bool = False,
              one_of: bool = False, strict: bool = False) -> Any:
        """:meth:`jptool.Registry.tools`."""
        return self._check_open().tools(dialect, flat, one_of, strict)

    def add_builtin(self, definition: Union[Dict[str, Any], _Text],
                    start: Callable[[Handle, Dict[str, Any]], Optional[int]],
                    apply: Optional[Callable[[Handle, Any], Optional[int]]] = None,
                    abort: Optional[Callable[[Handle], None]] = None) -> None:
        """:meth:`jptool.Registry.add_builtin`: the callbacks are plain
        functions, run inside the dispatches this class makes; an exception
        they raise is raised by an await (see the module's docstring)."""
        self._check_open().add_builtin(definition, start, apply, abort)

    def take_notifications(self) -> List[Dict[str, Any]]:
        """:meth:`jptool.Registry.take_notifications`."""
        return self._check_open().take_notifications()

    def take_turn_text(self, turn_end: Optional["AsyncBatch"] = None) -> str:
        """:meth:`jptool.Registry.take_turn_text`; ``turn_end`` is the done
        :class:`AsyncBatch` that :meth:`end_turn` returned, or None."""
        if turn_end is not None and not isinstance(turn_end, AsyncBatch):
            raise TypeError("take_turn_text: turn_end must be the AsyncBatch end_turn "
                            f"returned or None, not {type(turn_end).__name__}")
        return self._check_open().take_turn_text(
            turn_end.batch if turn_end is not None else None)

    # -- calls --

    def _wrap(self, batch: Batch) -> "AsyncBatch":
        ab = self._batches.get(id(batch))
        if ab is None or ab._batch is not batch:
            ab = AsyncBatch(self, batch)
            self._batches[id(batch)] = ab
        return ab

    def submit(self, calls: Union[List[Dict[str, Any]], _Text]) -> "AsyncBatch":
        """Submits the tool calls of one model message
        (:meth:`jptool.Registry.submit`, which says what ``calls`` may be
        and what it raises); they start at once. Returns an
        :class:`AsyncBatch`: ``await batch.results()``."""
        return self._wrap(self._check_open().submit(calls))

    async def call(self, name: _Text, arguments: Any = None, id: _Text = "c1",
                   timeout_ms: int = -1) -> Tuple[Any, bool]:
        """Runs one call ``{"id", "name", "arguments"}`` (``arguments`` None
        is ``{}``) and returns ``(content, is_error)`` once it has its
        result. Cancelling this await cancels the call; if it raises a
        callback's exception instead, the call goes on and its result is
        dropped. Raises as :meth:`submit`, JptError(JPT_ERR_TIMEOUT) when it
        has not finished after ``timeout_ms`` (-1: no limit; the call goes
        on, its result dropped, as :meth:`jptool.Registry.call` does), and
        JptError(JPT_ERR_CANCELLED) when the registry is closed first."""
        timeout_ms = _timeout_arg(timeout_ms)
        calls = [{"id": _from_c(_to_c(id, "id")), "name": _from_c(_to_c(name, "name")),
                  "arguments": {} if arguments is None else arguments}]
        batch = self.submit(calls)
        try:
            if not await _bounded(batch, timeout_ms):
                raise JptError(JPT_ERR_TIMEOUT,
                               f"call {calls[0]['id']!r} of {calls[0]['name']!r} did "
                               f"not finish within {timeout_ms} ms")
            result = batch.batch.results()[0]
        except asyncio.CancelledError:
            if not batch.closed:
                batch.cancel()
            raise
        finally:
            batch.close()
        return result["content"], bool(result["is_error"])

    async def wait(self, batch: "AsyncBatch", timeout_ms: int = -1) -> bool:
        """Returns True once every call of ``batch`` has its result, False
        when ``timeout_ms`` passed first (-1: no limit), as
        :meth:`jptool.Registry.wait` does; the batch runs on either way.
        Raises TypeError for a batch this registry did not submit, and what
        :meth:`AsyncBatch.wait` raises."""
        timeout_ms = _timeout_arg(timeout_ms)
        if not isinstance(batch, AsyncBatch) or batch._driver is not self:
            raise TypeError("wait: the batch must be one this AsyncRegistry submitted")
        return await _bounded(batch, timeout_ms)

    def end_turn(self, keep: bool = False, abort: bool = False) -> "AsyncBatch":
        """Ends the turn (:meth:`jptool.Registry.end_turn`, which says what
        each policy does and what it raises); returns its results as an
        :class:`AsyncBatch`. The "inquire" policy's question goes to the
        inquiry handler, which may be a coroutine."""
        return self._wrap(self._check_open().end_turn(keep, abort))

    # -- events --

    def _adopt(self, event: Dict[str, Any]) -> Dict[str, Any]:
        """An event of the wrapped registry, its batch as the AsyncBatch."""
        if event["batch"] is not None:
            event["batch"] = self._wrap(event["batch"])
        return event

    def _event_ready(self) -> bool:
        if not self._events and not self._closed:
            event = next(self._registry.events(), None)
            if event is not None:
                self._events.append(self._adopt(event))
        return bool(self._events)

    async def events(self) -> AsyncIterator[Dict[str, Any]]:
        """Yields the registry's events, oldest first, as they are queued
        (``jpt_registry_next_event``): dicts as
        :meth:`jptool.Registry.events` gives them, with ``"batch"`` the
        :class:`AsyncBatch` of a call_done or batch_done (or None). Waits,
        without polling, while none is queued; ends once the registry is
        closed and the events queued before are read. Each event is read
        once: two iterators share them. Raises a callback's exception (see
        the module's docstring); the iterator then ends."""
        self._event_readers += 1
        try:
            while True:
                if self._event_ready():
                    yield self._events.popleft()
                    continue
                if self._closed:
                    return
                await self._until(self._event_ready)
        finally:
            self._event_readers -= 1

    # -- questions --

    def set_inquiry_handler(self, fn: Optional[InquiryHandler]) -> None:
        """Installs ``fn(inquiry)`` as the handler of the questions the
        model did not drive (:meth:`jptool.Registry.set_inquiry_handler`
        says which and when). When ``fn`` returns an awaitable (it is a
        coroutine function), that runs as a task and what it returns is the
        answer, delivered when it finishes unless the task answered or
        cancelled the inquiry itself (None is JSON null). The inquiry is
        cancelled, with a reason naming the error, when the task raises,
        when its answer does not fit the question (JptError), or when the
        task is cancelled; the exception is raised by an await (see the
        module's docstring). An answer that comes after the call ended
        (JPT_ERR_CANCELLED) is dropped. None removes the handler."""
        reg = self._check_open()
        if fn is None:
            reg.set_inquiry_handler(None)
            return
        if not callable(fn):
            raise TypeError("set_inquiry_handler: fn must be callable or None")
        ask: InquiryHandler = fn

        def handler(inquiry: Inquiry) -> None:
            result = ask(inquiry)
            if inspect.isawaitable(result):
                task = self._loop.create_task(self._answer(inquiry, result))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        reg.set_inquiry_handler(handler)

    async def _answer(self, inquiry: Inquiry, awaitable: Awaitable[Any]) -> None:
        """Runs a coroutine inquiry handler and answers with its result."""
        try:
            value = await awaitable
        except BaseException as e:
            if inquiry.valid:
                if isinstance(e, asyncio.CancelledError):
                    inquiry.cancel("the inquiry handler was cancelled")
                else:
                    inquiry.cancel(f"the inquiry handler failed: {type(e).__name__}: {e}")
            if not isinstance(e, Exception):
                raise  # cancelled, KeyboardInterrupt, SystemExit: not ours to keep
            self._raise_later(e)
            return
        if not inquiry.valid:
            return  # answered or cancelled by the handler, or the registry closed
        try:
            inquiry.answer(value)
        except JptError as e:
            if e.status == JPT_ERR_CANCELLED:
                return  # the call ended meanwhile: nobody waits for the answer
            if inquiry.valid:
                inquiry.cancel(f"the inquiry handler's answer was refused: {e.message}")
            self._raise_later(e)
        except (TypeError, ValueError) as e:
            inquiry.cancel(f"the inquiry handler's answer is not JSON: {e}")
            self._raise_later(e)

    # -- streaming output --

    def set_output_handler(self, fn: Optional[Callable[[str, str, bool, int, bytes], None]]
                           ) -> None:
        """:meth:`jptool.Registry.set_output_handler`: ``fn(id, tool,
        stateful, stream, data)`` gets each piece of output a tool process
        writes, as the dispatches this class makes read it, in order. A
        plain function (TypeError for a coroutine function: the pieces
        would reach it out of order, if at all); to hand them to a
        coroutine, put them on an :class:`asyncio.Queue`. An exception it
        raises is raised by an await (see the module's docstring). None
        removes it."""
        reg = self._check_open()
        if inspect.iscoroutinefunction(fn):
            raise TypeError("set_output_handler: fn must be a plain function, called inside "
                            "dispatch with each piece of output in order, not a coroutine "
                            "function (put the pieces on an asyncio.Queue instead)")
        reg.set_output_handler(fn)

    # -- VFS tools --

    def add_files(self, name: _Text, files: Files) -> None:
        """:meth:`jptool.Registry.add_files`."""
        self._check_open().add_files(name, files)

    def tool_sandbox(self, tool: _Text) -> Tuple[int, str]:
        """:meth:`jptool.Registry.tool_sandbox`: what the OS sandbox of
        ``tool``'s processes enforces here."""
        return self._check_open().tool_sandbox(tool)

    def set_policy_handler(self, fn: Optional[PolicyHandler]) -> None:
        """Installs ``fn(request)`` as the policy handler of the registry's
        "vfs" tools (:meth:`jptool.Registry.set_policy_handler` says which
        requests come and how). When ``fn`` returns an awaitable (it is a
        coroutine function), that runs as a task and what it returns is the
        decision: JPT_DECISION_ALLOW, JPT_DECISION_ALLOW_ALWAYS,
        JPT_DECISION_DENY, True (allow) or False (deny), delivered when it
        finishes unless the task answered the request itself; the tool
        waits meanwhile, told ``pending``. The request is denied, with a
        reason naming why, when the task returns None without answering,
        raises, returns something else, or is cancelled; an exception is
        raised by an await (see the module's docstring). A decision that
        comes after the tool's request is gone is dropped. A plain function
        works as in :mod:`jptool`. None removes the handler."""
        reg = self._check_open()
        if fn is None:
            reg.set_policy_handler(None)
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        reg.set_policy_handler(self._policy_handler(fn))


class AsyncBatch:
    """The tool calls of one model message (:meth:`AsyncRegistry.submit`)
    or a turn end's results (:meth:`AsyncRegistry.end_turn`): a
    :class:`jptool.Batch` whose completion can be awaited.

    :attr:`batch` is the wrapped :class:`jptool.Batch`. :meth:`close` (or
    the end of a ``with`` block) frees it: calls still in flight go on and
    their results are dropped.
    """

    __slots__ = ("_batch", "_driver", "__weakref__")

    def __init__(self, driver: AsyncRegistry, batch: Batch):
        """Made by :class:`AsyncRegistry`."""
        self._driver = driver
        self._batch = batch

    @property
    def batch(self) -> Batch:
        """The wrapped :class:`jptool.Batch`."""
        return self._batch

    @property
    def done(self) -> bool:
        """True when every call has its result (``jpt_batch_done``)."""
        return self._batch.done

    @property
    def closed(self) -> bool:
        """True once the batch or its registry was closed."""
        return self._batch.closed

    def _settled(self) -> bool:
        return self._batch.closed or self._batch.done

    async def wait(self) -> None:
        """Returns once every call has its result. Raises ValueError for a
        closed batch, JptError(JPT_ERR_CANCELLED) when the batch or the
        registry is closed meanwhile, or a callback's exception (see the
        module's docstring); the batch runs on after the last two."""
        self._batch._p()
        await self._driver._until(self._settled)
        if self._driver._closed:
            raise JptError(JPT_ERR_CANCELLED,
                           "the registry was closed while a batch was awaited")
        if self._batch.closed:
            raise JptError(JPT_ERR_CANCELLED, "the batch was closed while it was awaited")

    async def results(self, dialect: Union[None, str, int] = None) -> List[Dict[str, Any]]:
        """The results once every call has one: :meth:`wait`, then
        :meth:`jptool.Batch.results` (which says what they look like and
        what ``dialect`` chooses)."""
        await self.wait()
        return self._batch.results(dialect)

    def cancel(self) -> None:
        """:meth:`jptool.Batch.cancel`: stops the calls still in flight;
        an await on the batch then resolves with their results."""
        self._batch.cancel()

    def cancel_call(self, call_id: _Text) -> None:
        """:meth:`jptool.Batch.cancel_call`: cancels one call of the batch,
        at the registry's next dispatch, as :meth:`cancel` cancels each;
        the others go on. A finished call keeps its result. Raises
        JptError(JPT_ERR_NOT_FOUND) for an id the batch does not hold."""
        self._batch.cancel_call(call_id)

    def set_call_timeout(self, call_id: Optional[_Text], timeout_ms: int) -> None:
        """:meth:`jptool.Batch.set_call_timeout`: ``timeout_ms`` from now
        the call (None: every call of the batch) is cancelled, its result
        saying that it reached the host's time limit, with the output so
        far; 0 removes the limit. The registry's timer is on its fd, so the
        loop wakes for it without a dispatch from this call."""
        self._batch.set_call_timeout(call_id, timeout_ms)

    def close(self) -> None:
        """:meth:`jptool.Batch.close`. An await on the batch under way
        raises JptError(JPT_ERR_CANCELLED). Closing twice is harmless."""
        was_open = not self._batch.closed
        self._batch.close()
        if was_open:
            self._driver._wake()

    def __enter__(self) -> "AsyncBatch":
        """Returns the batch; the ``with`` block closes it."""
        self._batch._p()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<jptool.aio.AsyncBatch closed>"
        return f"<jptool.aio.AsyncBatch {'done' if self.done else 'pending'}>"


def _timeout_arg(timeout_ms: Any) -> int:
    """A ``timeout_ms`` argument as the blocking calls take it: an int,
    -1 (or any negative) for no limit."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise TypeError(f"timeout_ms must be an int, not {type(timeout_ms).__name__}")
    return timeout_ms


async def _bounded(batch: "AsyncBatch", timeout_ms: int) -> bool:
    """Awaits ``batch.wait()``: True once it returns, False when
    ``timeout_ms`` (negative: no limit) passed first, the batch running on.
    A done batch is True at once, also for 0 (as jpt_registry_wait)."""
    if timeout_ms < 0:
        await batch.wait()
        return True
    batch.batch._p()  # ValueError for a closed batch, as wait() raises
    if batch.done:
        return True
    try:
        await asyncio.wait_for(batch.wait(), timeout_ms / 1000)
    except asyncio.TimeoutError:
        return False
    return True


def _deny(request: PolicyRequest, reason: str) -> None:
    """Denies a request whose tool may have gone meanwhile."""
    try:
        request.deny(reason)
    except JptError as e:
        if e.status != JPT_ERR_CANCELLED:
            raise


_BOOL_DECISIONS = {True: JPT_DECISION_ALLOW, False: JPT_DECISION_DENY}


async def _decide(request: PolicyRequest, awaitable: Awaitable[Any],
                  raise_later: Callable[[BaseException], None]) -> None:
    """Runs a coroutine policy handler and decides the request with its
    result (see :meth:`AsyncRegistry.set_policy_handler`)."""
    try:
        decision = await awaitable
    except BaseException as e:
        if request.valid:
            if isinstance(e, asyncio.CancelledError):
                _deny(request, "the policy handler was cancelled")
            else:
                _deny(request, f"the policy handler failed: {type(e).__name__}: {e}")
        if not isinstance(e, Exception):
            raise  # cancelled, KeyboardInterrupt, SystemExit: not ours to keep
        raise_later(e)
        return
    if not request.valid:
        return  # answered by the handler itself
    if decision is None:
        _deny(request, "the policy handler gave no decision")
        return
    if isinstance(decision, bool):
        decision = _BOOL_DECISIONS[decision]
    try:
        request.answer(decision)
    except JptError as e:
        if e.status == JPT_ERR_CANCELLED:
            return  # the tool's request is gone: nobody waits for the decision
        _deny(request, f"the policy handler's decision was refused: {e.message}")
        raise_later(e)


class AsyncVfsHost(_LoopDriver):
    """A :class:`jptool.VfsHost` driven by the running asyncio loop, as
    :class:`AsyncRegistry` drives a registry: the host's fd is watched with
    ``add_reader`` and dispatched when readable, its timer re-armed from
    ``jpt_vfs_host_get_timeout``; no thread, no polling.

    ``AsyncVfsHost(**options)`` makes a new host with the keyword options
    of :class:`jptool.VfsHost`; ``AsyncVfsHost(host)`` drives one made
    already (a tool may have been started on it). Call it inside a
    coroutine (RuntimeError otherwise). Raises what :class:`jptool.VfsHost`
    raises, TypeError for both a host and options, ValueError for a closed
    host, and RuntimeError for a host another AsyncVfsHost drives.

    Start the tool with :meth:`spawn` or :meth:`attach`, ``await``
    :meth:`wait` for its final state; :meth:`apply`, :meth:`cancel`,
    :meth:`state` and :meth:`sandbox` are those of the host. The policy handler
    (:meth:`set_policy_handler`) may be a coroutine function, as
    :meth:`AsyncRegistry.set_policy_handler` describes; an exception a
    handler raises is raised by the first await on this object under way
    or next begun (:meth:`wait`, :meth:`aclose`), once. Close it with
    :meth:`aclose` (or ``async with``): a tool still running is cancelled
    and awaited without blocking the loop, then the host is freed.

    :attr:`host` is the wrapped :class:`jptool.VfsHost`.
    """

    def __init__(self, host: Optional[VfsHost] = None, **options: Any):
        loop = _running_loop("AsyncVfsHost", "VfsHost")
        host, made_here = _adopt("AsyncVfsHost", "host", VfsHost, host, options)
        super().__init__(loop, host.fileno())  # ValueError when closed
        self._host = host
        try:
            loop.add_reader(self._fd, self._drive)
        except BaseException:
            if made_here:
                host.close()
            raise
        host._driver = self
        self._rearm(more=False)

    # -- the driver's hooks --

    def _alive(self) -> bool:
        return not self._host.closed

    def _dispatch_once(self) -> int:
        host = self._host
        if not host._ptr:  # as the library answers NULL (_drive checked _alive())
            return JPT_ERR_INVALID
        with host._busy():
            return _lib.jpt_vfs_host_dispatch(host._ptr)

    def _take_callback_exception(self) -> Optional[BaseException]:
        pending = self._host._pending
        return pending.pop() if pending else None

    def _dispatch_error(self, rc: int) -> JptError:
        return self._host._error(rc)

    def _get_timeout(self) -> int:
        ptr = self._host._ptr
        return _lib.jpt_vfs_host_get_timeout(ptr) if ptr else JPT_ERR_INVALID

    # -- lifetime --

    @property
    def host(self) -> VfsHost:
        """The wrapped :class:`jptool.VfsHost`."""
        return self._host

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` (or :meth:`close`) has freed the host."""
        return self._closed

    @property
    def errmsg(self) -> str:
        """:attr:`jptool.VfsHost.errmsg`: the message of the last failed
        call on the host, or ""."""
        return self._check_open().errmsg

    def _check_open(self) -> VfsHost:
        if self._closed:
            raise ValueError("operation on a closed AsyncVfsHost")
        return self._host

    def _started(self) -> bool:
        """Whether a tool was started on the host."""
        try:
            state = self._host.state()
        except JptError as e:
            return e.status != JPT_ERR_STATE
        if state is not None:
            state.close()
        return True

    async def aclose(self) -> None:
        """Ends the tool and frees the host without blocking the loop: a
        tool still running is cancelled (:meth:`jptool.VfsHost.cancel`:
        ``cancel``, SIGTERM after the kill grace, SIGKILL after another)
        and awaited, then the host is freed. Coroutine policy handlers still
        running are cancelled (their requests denied). If this await is
        itself cancelled, the host is freed at once (SIGKILL). Raises an
        exception a handler raised meanwhile (once the host is freed).
        Closing twice is harmless."""
        if self._closed:
            return
        host = self._host
        try:
            if self._failure is None and not host.closed and self._started() \
                    and not host.done:
                host.cancel()
                self._kick()
                await self._until(lambda: host.done, raise_pending=False)
        finally:
            self._free()
        if self._pending:
            raise self._pending.pop()

    def close(self) -> None:
        """Frees the host the blocking way (:meth:`jptool.VfsHost.close`:
        a tool still running is killed with SIGKILL and reaped). Closing
        twice is harmless."""
        if self._closed:
            return
        self._free()
        if self._pending:
            raise self._pending.pop()

    def _free(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._detach()
        for task in self._tasks:
            task.cancel()
        try:
            self._host.close()
        finally:
            self._host._driver = None
            self._wake(everyone=True)

    async def __aenter__(self) -> "AsyncVfsHost":
        """Returns the host; the ``async with`` block closes it with
        :meth:`aclose`."""
        self._check_open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        if self._closed:
            return "<jptool.aio.AsyncVfsHost closed>"
        return f"<jptool.aio.AsyncVfsHost fd={self._fd}>"

    # -- the tool (as jptool.VfsHost) --

    def spawn(self, argv: List[Any], tool: Union[Dict[str, Any], _Text]) -> None:
        """:meth:`jptool.VfsHost.spawn`."""
        self._check_open().spawn(argv, tool)
        self._kick()

    def attach(self, read_fd: int, write_fd: int, tool: Union[Dict[str, Any], _Text]) -> None:
        """:meth:`jptool.VfsHost.attach`."""
        self._check_open().attach(read_fd, write_fd, tool)
        self._kick()

    def apply(self, input: Any, raw: bool = False) -> None:
        """:meth:`jptool.VfsHost.apply`."""
        self._check_open().apply(input, raw)
        self._kick()

    def cancel(self) -> None:
        """:meth:`jptool.VfsHost.cancel`."""
        self._check_open().cancel()
        self._kick()

    def state(self) -> Optional[State]:
        """:meth:`jptool.VfsHost.state`."""
        return self._check_open().state()

    def sandbox(self) -> Tuple[int, str]:
        """:meth:`jptool.VfsHost.sandbox`: what the spawned tool's OS
        sandbox enforces."""
        return self._check_open().sandbox()

    @property
    def done(self) -> bool:
        """:attr:`jptool.VfsHost.done`."""
        return self._check_open().done

    async def wait(self) -> State:
        """Returns the tool's final state (a new :class:`jptool.State`;
        close it) once it has ended. Raises JptError(JPT_ERR_STATE) when no
        tool was started, JPT_ERR_CANCELLED when the host is closed first,
        a handler's exception (the tool runs on), or the dispatch failure."""
        host = self._check_open()
        if not self._started():
            raise JptError(JPT_ERR_STATE, "wait: no tool was started on this host")
        await self._until(lambda: host.done)
        if self._closed:
            raise JptError(JPT_ERR_CANCELLED, "the host was closed while its tool was awaited")
        state = host.state()
        assert state is not None  # an ended tool always has its final state
        return state

    def set_policy_handler(self, fn: Optional[PolicyHandler]) -> None:
        """Installs ``fn(request)`` as the host's policy handler
        (:meth:`jptool.VfsHost.set_policy_handler`); it may be a coroutine
        function, whose result is the decision, as
        :meth:`AsyncRegistry.set_policy_handler` describes."""
        host = self._check_open()
        if fn is None:
            host.set_policy_handler(None)
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        host.set_policy_handler(self._policy_handler(fn))
