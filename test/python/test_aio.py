"""Tests of jptool.aio (bindings/python/jptool/aio.py): a registry driven by
a running asyncio loop, as an asyncio host drives it.

Run by `meson test` (suite "python") with the environment of
test_jptool.py, whose helpers (the test tools' configuration, the child
process check) it shares. Standard library only; no sleep synchronises
anything: each test awaits the registry, with WAIT_MS as a bound so that a
failure cannot hang.
"""

import asyncio
import inspect
import json
import os
import tempfile
import threading
import unittest

import jptool
from jptool import JptError, Registry
from jptool.aio import AsyncBatch, AsyncRegistry, AsyncVfsHost

from test_jptool import (WAIT_MS, await_call, await_tools_config, children_in_proc,
                         needs_tools, response, slept, spawn_call, tool)

WAIT = WAIT_MS / 1000


def aio_tools_config():
    """RFD 037's tools of test_jptool, a one-shot tool that asks, and a
    stateful tool that ignores SIGTERM."""
    config = await_tools_config()
    config["tools"] += [
        {"name": "merge", "command": [tool("ask-tool"), "{{tool}}"],
         "question_target": "assistant"},
        {"name": "stubborn", "stateful": True, "command": [tool("ignore-term")]},
        # A one-shot tool that says it runs (a line into the FIFO named
        # `fifo`), then sleeps for ten minutes.
        {"name": "hold",
         "command": ["sh", "-c", 'echo up > "$1"; exec sleep 600', "hold",
                     "{{arguments.fifo}}"],
         "parameters": {"type": "object", "properties": {"fifo": {"type": "string"}},
                        "required": ["fifo"]}},
    ]
    return config


class AsyncTestCase(unittest.IsolatedAsyncioTestCase):
    """An AsyncRegistry with aio_tools_config() on the test's loop; at the
    end it is closed and no child is left."""

    async def asyncSetUp(self):
        self.r = self.registry()
        self.tmp = tempfile.TemporaryDirectory()
        self.fifo = os.path.join(self.tmp.name, "fifo")
        os.mkfifo(self.fifo)

    async def asyncTearDown(self):
        self.tmp.cleanup()
        await self.r.aclose()
        self.assertTrue(self.r.closed)
        self.assertEqual(children_in_proc(), [])

    @staticmethod
    def registry(**kw):
        opts = {"kill_grace_ms": 300, "drain_ms": 100, "settle_ms": 100}
        opts.update(kw)
        r = AsyncRegistry(**opts)
        r.load_tools(aio_tools_config())
        return r

    async def call(self, name, arguments, **kw):
        return await asyncio.wait_for(self.r.call(name, arguments, **kw), WAIT)

    async def results(self, batch):
        return await asyncio.wait_for(batch.results(), WAIT)

    def hold(self, call_id):
        """A call of the hold tool."""
        return {"id": call_id, "name": "hold", "arguments": {"fifo": self.fifo}}

    async def held(self):
        """Returns once a hold tool runs: its line is in the FIFO, read on
        the loop."""
        loop = asyncio.get_running_loop()
        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            readable = loop.create_future()
            loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
            try:
                await asyncio.wait_for(readable, WAIT)
            finally:
                loop.remove_reader(fd)
            self.assertEqual(os.read(fd, 100), b"up\n")
        finally:
            os.close(fd)

    async def next_event(self, events, accept):
        """The next event of the iterator `events` that accept() takes."""
        async def find():
            async for event in events:
                if accept(event):
                    return event
            self.fail("the events ended")
        return await asyncio.wait_for(find(), WAIT)


@needs_tools
class AsyncHostTest(AsyncTestCase):
    async def test_a_host_spawns_awaits_and_answers_an_inquiry_from_a_coroutine(self):
        asked, asking, gate = [], asyncio.Event(), asyncio.Event()

        async def handler(q):
            asked.append((q.tool, q.call_id, q.handle_id, q.target, q.question))
            asking.set()
            await gate.wait()  # the user thinks it over; the loop runs on
            return True        # the answer: reset the counter

        self.r.set_inquiry_handler(handler)
        content, is_error = await self.call("counter", {"action": "spawn", "id": "c"})
        self.assertEqual((response(content), is_error),
                         ({"id": "c", "state": "running", "content": "count=0"}, False))
        content, _ = await self.call("counter", {"action": "apply", "id": "c",
                                                 "input": "inc\n"})
        self.assertEqual(response(content)["content"], "count=1")
        content, _ = await self.call("counter", {"action": "apply", "id": "c",
                                                 "input": "ask\n"})
        self.assertEqual(response(content)["state"], "waiting")
        self.assertEqual(asked, [])  # the model saw that question itself

        list(self.r.registry.events())  # those of the calls so far
        events = self.r.events()
        batch = self.r.submit([await_call("w", all=["c"])])
        self.assertIsInstance(batch, AsyncBatch)
        # Awaited, the handle's question goes to the handler, a task.
        await asyncio.wait_for(asking.wait(), WAIT)
        self.assertEqual(asked, [(
            "counter", "w", "c", jptool.JPT_TARGET_USER,
            {"id": "reset", "text": "Reset the counter?",
             "schema": {"type": "boolean"}, "default": False})])
        self.assertFalse(batch.done)
        # The answer goes to the tool when the coroutine returns it.
        gate.set()
        await self.next_event(events, lambda e: e["type"] == "output"
                              and e["handle_id"] == "c")
        content, _ = await self.call("counter", {"action": "fetch", "id": "c"})
        self.assertEqual(response(content),
                         {"id": "c", "state": "running", "content": "count=0 (reset)"})
        self.assertFalse(batch.done)
        content, _ = await self.call("counter", {"action": "apply", "id": "c",
                                                 "input": "stop\n"})
        self.assertEqual(response(content),
                         {"id": "c", "state": "stopped", "result": "final count=0"})
        results = await self.results(batch)
        self.assertEqual(len(results), 1)
        self.assertEqual(response(results[0]["content"]), {
            "completed": [{"id": "c", "state": "stopped", "result": "final count=0"}],
            "pending": []})
        self.assertTrue(batch.done)
        await events.aclose()

    async def test_spawns_and_an_await_in_one_batch_resolve_together(self):
        # RFD 037's example: two spawns awaited in the message that spawns them.
        with self.r.submit([
            spawn_call("call_1", "cargo_check", "check", 400, "Compiling\n"),
            spawn_call("call_2", "cargo_test", "test", 700, "running 42 tests\n"),
            await_call("call_3", all=["check", "test"]),
        ]) as batch:
            res = await self.results(batch)
            self.assertEqual([(x["id"], x["is_error"]) for x in res],
                             [("call_1", False), ("call_2", False), ("call_3", False)])
            self.assertEqual(response(res[2]["content"]), {
                "completed": [
                    {"id": "check", "state": "stopped", "result": slept(400)},
                    {"id": "test", "state": "stopped", "result": slept(700)},
                ],
                "pending": [],
            })
            # Awaited again, a done batch answers at once, in a provider's shape.
            anthropic = await self.results_as(batch, "anthropic")
            self.assertEqual([x["tool_use_id"] for x in anthropic],
                             ["call_1", "call_2", "call_3"])
        self.assertTrue(batch.closed)
        with self.assertRaises(ValueError):
            await batch.results()

    async def results_as(self, batch, dialect):
        return await asyncio.wait_for(batch.results(dialect), WAIT)

    async def test_the_loop_drives_it_without_a_thread_or_polling(self):
        threads = threading.active_count()
        dispatches = []
        real = jptool._lib.lib.jpt_registry_dispatch

        def counting(ptr):
            dispatches.append(1)
            return real(ptr)

        jptool._lib.lib.jpt_registry_dispatch = counting
        try:
            # A spawn answers when its output has been quiet for settle_ms: a
            # registry timer, for which the loop holds a timer of its own.
            spawn = asyncio.ensure_future(self.r.call(
                "cargo_check", {"action": "spawn", "id": "s", "ms": 600, "text": "x"}))
            events = self.r.events()
            await self.next_event(events, lambda e: e["type"] == "output")
            self.assertGreater(self.r.registry.timeout(), 0)
            self.assertIsNotNone(self.r._timer)
            content, _ = await asyncio.wait_for(spawn, WAIT)
            self.assertEqual(response(content),
                             {"id": "s", "state": "running", "content": "x"})
            content, _ = await self.call("nap", {"ms": 300})
            self.assertEqual(content, "xslept 300\n")
            self.assertEqual(threading.active_count(), threads)
            await events.aclose()
        finally:
            jptool._lib.lib.jpt_registry_dispatch = real
        # A handful per process start, output, exit and timer; polling
        # would make thousands in these 300 ms.
        self.assertLess(len(dispatches), 50, len(dispatches))

    async def test_events_come_as_they_are_queued_and_end_with_the_registry(self):
        seen = []

        async def watch():
            async for event in self.r.events():
                seen.append(event)

        watcher = asyncio.ensure_future(watch())
        with self.r.submit([{"id": "n", "name": "nap", "arguments": {"ms": 100}},
                            spawn_call("s", "cargo_test", "t", 10000, "T")]) as batch:
            await self.results(batch)
            await self.r.aclose()
            await asyncio.wait_for(watcher, WAIT)
        self.assertEqual(sorted((e["type"], e["call_id"] or e["handle_id"])
                                for e in seen[:-2]),
                         [("batch_done", None), ("call_done", "n"), ("call_done", "s"),
                          ("output", "t")])
        for e in seen[:-2]:
            if e["type"] in ("call_done", "batch_done"):
                self.assertIs(e["batch"], batch)
        # The handle that shutdown stopped, and the shutdown (in the order
        # the library queues them).
        self.assertEqual(sorted((e["type"], e["handle_id"], e["state"]) for e in seen[-2:]),
                         [("shutdown", None, None), ("state", "t", "stopped")])
        # An iterator begun on a closed registry ends at once.
        self.assertEqual([e async for e in self.r.events()], [])

    async def test_aclose_does_not_hold_up_the_loop_for_a_tool_that_ignores_sigterm(self):
        await self.r.aclose()
        self.r = self.registry(kill_grace_ms=2000)
        content, _ = await self.call("stubborn", {"action": "spawn", "id": "s"})
        self.assertEqual(response(content)["content"], "ignoring SIGTERM\n")
        closing = asyncio.ensure_future(self.r.aclose())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        # The loop runs other tasks while the tool is given its kill grace.
        self.assertFalse(closing.done())
        self.assertFalse(self.r.closed)
        with self.assertRaises(JptError) as cm:
            self.r.submit([{"id": "x", "name": "nap", "arguments": {"ms": 1}}])
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_STATE)
        await asyncio.wait_for(closing, WAIT)
        self.assertTrue(self.r.closed)
        self.assertTrue(self.r.registry.closed)
        self.assertEqual(children_in_proc(), [])
        with self.assertRaises(ValueError):
            self.r.submit([])
        await self.r.aclose()  # harmless

    async def test_cancelling_a_call_cancels_it(self):
        task = asyncio.ensure_future(self.r.call("hold", self.hold("h")["arguments"]))
        await self.held()
        [pid] = children_in_proc()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        # The one-shot child is killed, long before its sleep ends.
        await self.exited(pid)

    async def exited(self, pid):
        """Returns once process `pid` has exited (its pidfd, on the loop)."""
        loop = asyncio.get_running_loop()
        fd = os.pidfd_open(pid)
        try:
            gone = loop.create_future()
            loop.add_reader(fd, lambda: gone.done() or gone.set_result(None))
            try:
                await asyncio.wait_for(gone, WAIT)
            finally:
                loop.remove_reader(fd)
        finally:
            os.close(fd)

    async def test_cancelling_an_await_of_results_leaves_the_batch_running(self):
        batch = self.r.submit([self.hold("h")])
        await self.held()
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(batch.results(), 0.05)
        self.assertFalse(batch.done)
        self.assertEqual(len(children_in_proc()), 1)
        batch.cancel()
        self.assertEqual(await self.results(batch), [
            {"id": "h", "content": "Error: The call `hold` was cancelled",
             "is_error": True}])
        batch.close()

    async def test_closing_a_batch_ends_its_await(self):
        batch = self.r.submit([self.hold("h")])
        waiting = asyncio.ensure_future(batch.wait())
        await self.held()
        batch.close()
        with self.assertRaises(JptError) as cm:
            await asyncio.wait_for(waiting, WAIT)
        self.assertEqual((cm.exception.status, cm.exception.message),
                         (jptool.JPT_ERR_CANCELLED,
                          "the batch was closed while it was awaited"))

    async def test_aclose_ends_the_calls_under_way_with_their_results(self):
        batch = self.r.submit([self.hold("h")])
        waiting = asyncio.ensure_future(batch.results())
        await self.held()
        await self.r.aclose()
        self.assertEqual(await asyncio.wait_for(waiting, WAIT), [
            {"id": "h", "content": "Error: The registry is shutting down: the tool "
                                   "was stopped", "is_error": True}])
        self.assertTrue(batch.closed)

    async def test_a_blocking_close_ends_the_awaits(self):
        batch = self.r.submit([self.hold("h")])
        waiting = asyncio.ensure_future(batch.results())
        await self.held()
        self.r.close()
        with self.assertRaises(JptError) as cm:
            await asyncio.wait_for(waiting, WAIT)
        self.assertEqual((cm.exception.status, cm.exception.message),
                         (jptool.JPT_ERR_CANCELLED,
                          "the registry was closed while a batch was awaited"))
        self.assertTrue(batch.closed)

    async def test_one_call_is_cancelled_and_another_meets_a_host_time_limit(self):
        with self.r.submit([{"id": "long", "name": "nap", "arguments": {"ms": 600000}},
                            self.hold("slow"),
                            {"id": "short", "name": "nap", "arguments": {"ms": 0}}]) as batch:
            with self.assertRaises(JptError) as cm:
                batch.cancel_call("nope")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_NOT_FOUND)
            with self.assertRaises(JptError) as cm:
                batch.set_call_timeout("nope", 100)
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_NOT_FOUND)
            await self.held()
            batch.cancel_call("long")
            # No timer of the registry's but this one: the loop wakes for it.
            batch.set_call_timeout("slow", 200)
            results = await self.results(batch)
            # With what it printed so far, if that was read already.
            self.assertEqual((results[0]["id"], results[0]["is_error"]), ("long", True))
            self.assertTrue(results[0]["content"].startswith(
                "Error: The call `nap` was cancelled"), results[0])
            self.assertEqual(results[1]["id"], "slow")
            self.assertTrue(results[1]["is_error"])
            self.assertIn("reached the host's time limit of 200 ms", results[1]["content"])
            self.assertEqual(results[2], {"id": "short", "content": "xslept 0\n",
                                          "is_error": False})
            # A finished call keeps its result.
            batch.cancel_call("short")
            batch.set_call_timeout(None, 0)
            self.assertEqual((await self.results(batch))[2]["content"], "xslept 0\n")
        with self.assertRaises(ValueError):
            batch.cancel_call("long")
        with self.assertRaises(ValueError):
            batch.set_call_timeout(None, 1)

    async def test_a_time_limit_for_every_call_of_a_batch(self):
        with self.r.submit([self.hold("a"),
                            spawn_call("s", "cargo_test", "t", 600000, "T"),
                            await_call("w", all=["t"])]) as batch:
            batch.set_call_timeout(None, 300)
            results = await self.results(batch)
        self.assertIn("reached the host's time limit of 300 ms", results[0]["content"])
        self.assertTrue(results[0]["is_error"])
        self.assertEqual(response(results[1]["content"])["state"], "running")
        self.assertEqual(response(results[2]["content"]), {
            "completed": [], "pending": [{"id": "t", "state": "running"}],
            "cancelled": True})

    async def test_waiting_for_a_batch_with_a_bound(self):
        batch = self.r.submit([self.hold("h")])
        await self.held()
        self.assertFalse(await asyncio.wait_for(self.r.wait(batch, 50), WAIT))
        self.assertFalse(await self.r.wait(batch, 0))
        self.assertFalse(batch.done)
        batch.cancel()
        self.assertTrue(await asyncio.wait_for(self.r.wait(batch), WAIT))
        self.assertTrue(await self.r.wait(batch, 0))  # done: at once
        with self.assertRaises(TypeError):
            await self.r.wait(batch.batch)
        with self.assertRaises(TypeError):
            await self.r.wait(batch, 1.5)
        batch.close()
        with self.assertRaises(ValueError):
            await self.r.wait(batch, 10)

    async def test_a_call_with_a_bound_raises_and_goes_on(self):
        with self.assertRaises(JptError) as cm:
            await self.call("hold", self.hold("h")["arguments"], id="h", timeout_ms=100)
        self.assertEqual((cm.exception.status, cm.exception.message),
                         (jptool.JPT_ERR_TIMEOUT,
                          "call 'h' of 'hold' did not finish within 100 ms"))
        # The call goes on (its result dropped), as jptool.Registry.call's.
        await self.held()
        self.assertEqual(len(children_in_proc()), 1)
        self.assertEqual(await self.call("nap", {"ms": 0}, timeout_ms=WAIT_MS),
                         ("xslept 0\n", False))

    async def test_the_output_handler_streams_without_consuming(self):
        seen = []
        self.r.set_output_handler(
            lambda id, tool, stateful, stream, data: seen.append((id, tool, stateful, stream,
                                                                  data)))
        content, _ = await self.call("nap", {"ms": 0}, id="n1")
        self.assertEqual(content, "xslept 0\n")
        content, _ = await self.call("counter", {"action": "spawn", "id": "c"})
        self.assertEqual(response(content)["content"], "count=0")
        self.assertEqual(b"".join(d for i, *_, d in seen if i == "n1"), b"xslept 0\n")
        self.assertEqual({(i, t, s, st) for i, t, s, st, _ in seen},
                         {("n1", "nap", False, jptool.JPT_STREAM_STDOUT),
                          ("c", "counter", True, jptool.JPT_STREAM_STDOUT)})
        self.r.set_output_handler(None)
        seen.clear()
        await self.call("nap", {"ms": 0})
        self.assertEqual(seen, [])

    async def test_an_output_handler_is_a_plain_function(self):
        async def coroutine_handler(*args):
            pass  # pragma: no cover - refused before it could run
        with self.assertRaises(TypeError):
            self.r.set_output_handler(coroutine_handler)
        with self.assertRaises(TypeError):
            self.r.set_output_handler(42)

    async def test_an_output_handler_exception_is_raised_by_an_await(self):
        pieces = []

        def broken(*args):
            pieces.append(args[-1])
            if len(pieces) == 1:
                raise KeyError("no screen")
        self.r.set_output_handler(broken)
        batch = self.r.submit([{"id": "c1", "name": "nap", "arguments": {"ms": 0}}])
        with self.assertRaises(KeyError):
            await self.results(batch)
        # Raised once; the output goes on to the handler and the model.
        # (Awaited to its end: the rest of its output may come after a
        # later call's.)
        self.assertEqual((await self.results(batch))[0]["content"], "xslept 0\n")
        self.assertEqual(await self.call("nap", {"ms": 0}), ("xslept 0\n", False))
        self.assertEqual(b"".join(pieces), b"xslept 0\n" * 2)


@needs_tools
class AsyncInquiryTest(AsyncTestCase):
    async def test_a_coroutine_answers_by_returning_or_by_itself(self):
        asked = []

        async def handler(q):
            asked.append(q.question["id"])
            if q.question["id"] == "branch":
                q.answer("develop")
                return "ignored: the inquiry is answered"
            return True

        self.r.set_inquiry_handler(handler)
        self.assertEqual(await self.call("merge", {}), ("merged into develop", False))
        self.assertEqual(asked, ["branch", "confirm"])

    async def test_a_plain_handler_works_as_in_jptool(self):
        self.r.set_inquiry_handler(
            lambda q: q.answer("staging" if q.question["id"] == "branch" else True))
        self.assertEqual(await self.call("merge", {}), ("merged into staging", False))
        self.r.set_inquiry_handler(None)
        content, is_error = await self.call("merge", {})
        self.assertTrue(is_error)
        self.assertIn("no inquiry handler is installed", content)
        with self.assertRaises(TypeError):
            self.r.set_inquiry_handler(42)

    async def test_a_failing_coroutine_cancels_the_inquiry_and_an_await_raises(self):
        async def handler(q):
            raise LookupError("no such branch")

        self.r.set_inquiry_handler(handler)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as batch:
            with self.assertRaises(LookupError):
                await self.results(batch)
            self.assertEqual(await self.results(batch), [  # raised once only
                {"id": "c", "content": "The question `branch` was not answered: the "
                                       "inquiry handler failed: LookupError: no such "
                                       "branch", "is_error": True}])

    async def test_an_answer_the_schema_refuses_cancels_the_inquiry(self):
        async def handler(q):
            return "trunk"

        self.r.set_inquiry_handler(handler)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as batch:
            with self.assertRaises(JptError) as cm:
                await self.results(batch)
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            res = await self.results(batch)
        self.assertEqual(res, [{
            "id": "c", "is_error": True,
            "content": "The question `branch` was not answered: the inquiry handler's "
                       "answer was refused: " + cm.exception.message}])
        self.assertIn("the answer does not fit question 'branch'", cm.exception.message)

    async def test_an_answer_that_is_not_json_cancels_the_inquiry(self):
        async def handler(q):
            return {1, 2}

        self.r.set_inquiry_handler(handler)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as batch:
            with self.assertRaises(TypeError):
                await self.results(batch)
            res = await self.results(batch)
        self.assertTrue(res[0]["is_error"])
        self.assertTrue(res[0]["content"].startswith(
            "The question `branch` was not answered: the inquiry handler's answer is "
            "not JSON: answer: cannot be written as JSON"), res[0]["content"])

    async def test_cancelling_the_handler_task_cancels_the_inquiry(self):
        tasks, asking = [], asyncio.Event()

        async def handler(q):
            tasks.append(asyncio.current_task())
            asking.set()
            await asyncio.Event().wait()  # never answers

        self.r.set_inquiry_handler(handler)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as batch:
            await asyncio.wait_for(asking.wait(), WAIT)
            tasks[0].cancel()
            self.assertEqual(await self.results(batch), [{
                "id": "c", "is_error": True,
                "content": "The question `branch` was not answered: the inquiry "
                           "handler was cancelled"}])

    async def test_the_turn_ends_question_goes_to_a_coroutine(self):
        async def handler(q):
            listing = json.loads(q.context.blocks[0]["text"])
            return {"handles": [{"id": h["id"],
                                 "action": "wait" if h["id"] == "w" else "abort"}
                                for h in listing]}

        self.r.set_inquiry_handler(handler)
        for spawn in (spawn_call("s1", "job_inquire", "w", 400, "wait for me\n"),
                      spawn_call("s2", "cargo_test", "a", 600000, "abort me\n")):
            await self.call(spawn["name"], spawn["arguments"])
        with self.r.end_turn() as batch:
            res = await self.results(batch)
        self.assertEqual([(x["id"], x["is_error"]) for x in res], [("w", False)])
        self.assertEqual(response(res[0]["content"]),
                         {"id": "w", "state": "stopped", "result": slept(400)})
        self.assertEqual(children_in_proc(), [])

    async def test_the_turn_ends_text(self):
        # AsyncRegistry.take_turn_text takes the AsyncBatch end_turn gave.
        self.r.set_inquiry_handler(lambda q: q.answer({"handles": [
            {"id": "w", "action": "wait"}]}))
        spawn = spawn_call("s1", "job_inquire", "w", 400, "W")
        await self.call(spawn["name"], spawn["arguments"])
        with self.r.end_turn() as batch:
            await self.results(batch)
            with self.assertRaises(TypeError):
                self.r.take_turn_text(batch.batch)
            text = self.r.take_turn_text(batch)
        self.assertEqual(text, "[Handle `w` (tool `job_inquire`) stopped after your last "
                               f"turn]\n{slept(400)}\n\n")
        self.assertEqual(self.r.take_turn_text(), "")

    async def test_inquiry_tasks_still_running_are_cancelled_by_aclose(self):
        tasks, cancelled, asking = [], [], asyncio.Event()

        async def handler(q):
            tasks.append(asyncio.current_task())
            asking.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(q.valid)
                raise

        self.r.set_inquiry_handler(handler)
        batch = self.r.submit([{"id": "c", "name": "merge", "arguments": {}}])
        await asyncio.wait_for(asking.wait(), WAIT)
        await self.r.aclose()
        with self.assertRaises(asyncio.CancelledError):
            await tasks[0]
        self.assertEqual(cancelled, [False])  # the registry took the inquiry along
        self.assertTrue(batch.closed)


@needs_tools
class AsyncBuiltinTest(AsyncTestCase):
    async def test_a_builtin_may_report_later_from_a_task(self):
        later = []

        def start(handle, arguments):
            async def finish():
                handle.update({"content": [{"type": "text",
                                            "text": f"hello {arguments['name']}"}]})
            later.append(asyncio.ensure_future(finish()))

        self.r.add_builtin({"name": "greet_later"}, start)
        self.assertEqual(await self.call("greet_later", {"name": "Ada"}),
                         ("hello Ada", False))
        await later[0]

    async def test_a_builtin_callback_exception_is_raised_by_an_await(self):
        def start(handle, arguments):
            raise OSError("the sub-agent is gone")

        self.r.add_builtin({"name": "broken"}, start)
        with self.r.submit([{"id": "b", "name": "broken", "arguments": {}}]) as batch:
            with self.assertRaises(OSError):
                await self.results(batch)
            res = await self.results(batch)
        self.assertTrue(res[0]["is_error"])
        self.assertEqual(await self.call("nap", {"ms": 1}), ("xslept 1\n", False))


class AsyncRegistryRulesTest(unittest.IsolatedAsyncioTestCase):
    def test_outside_a_running_loop_is_refused(self):
        # The host trial: asyncio's bare "no running event loop" did not
        # say what to do.
        with self.assertRaises(RuntimeError) as cm:
            AsyncRegistry()
        self.assertIn("jptool.aio.AsyncRegistry() was made outside a coroutine", str(cm.exception))
        self.assertIn("asyncio.run(main())", str(cm.exception))
        self.assertIn("jptool.Registry for blocking calls", str(cm.exception))
        self.assertIsNone(cm.exception.__cause__)
        with self.assertRaises(RuntimeError) as cm:
            AsyncVfsHost()
        self.assertIn("jptool.aio.AsyncVfsHost() was made outside a coroutine", str(cm.exception))
        self.assertIn("jptool.VfsHost for blocking calls", str(cm.exception))

    async def test_constructor_arguments(self):
        with Registry() as sync:
            with self.assertRaises(TypeError):
                AsyncRegistry(sync, kill_grace_ms=1)
            with self.assertRaises(TypeError):
                AsyncRegistry(42)
            r = AsyncRegistry(sync)
            self.assertIs(r.registry, sync)
            with self.assertRaises(RuntimeError):
                AsyncRegistry(sync)
            await r.aclose()
            self.assertTrue(sync.closed)
        with self.assertRaises(ValueError):
            AsyncRegistry(sync)
        async with AsyncRegistry(kill_grace_ms=100) as r:
            self.assertEqual(r.registry.tools("mcp"), {"tools": []})
            self.assertEqual(r.tools("mcp"), {"tools": []})
            self.assertEqual(r.take_notifications(), [])
        self.assertTrue(r.closed)
        with self.assertRaises(ValueError):
            r.load_tools({"tools": []})
        r.close()  # harmless

    async def test_a_failing_dispatch_is_raised_by_every_await(self):
        r = AsyncRegistry()
        r.add_builtin({"name": "idle"}, lambda h, a: None)
        real = jptool._lib.lib.jpt_registry_dispatch
        jptool._lib.lib.jpt_registry_dispatch = lambda ptr: jptool.JPT_ERR_IO
        try:
            batch = r.submit([{"id": "i", "name": "idle", "arguments": {}}])
            for _ in range(2):
                with self.assertRaises(JptError) as cm:
                    await asyncio.wait_for(batch.results(), WAIT)
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_IO)
        finally:
            jptool._lib.lib.jpt_registry_dispatch = real
        await r.aclose()
        self.assertTrue(r.registry.closed)

class AsyncApiParityTest(unittest.TestCase):
    """Every public method and property of the blocking API has its asyncio
    form: the method of the same name and parameters on the async class,
    a coroutine where the blocking one waits; or a form named here; or a
    reason here why there is none. A blocking method added without its
    async form fails this test."""

    # The blocking classes and what wraps each for asyncio.
    ASYNC_CLASS = {Registry: AsyncRegistry, jptool.Batch: AsyncBatch,
                   jptool.VfsHost: AsyncVfsHost}

    # The public classes that need no async form, and why.
    USED_AS_THEY_ARE = {
        "JptError": "an exception",
        "State": "a value: parsing, building and rendering never wait",
        "Policy": "a value: check() answers at once",
        "Files": "direct file access, or a call a Python handler answers within it",
        "FilesRequest": "answered by the handler that got it, at once or later",
        "Inquiry": "answered at once or later; the aio handlers may be coroutines",
        "PolicyRequest": "answered at once or later; the aio handlers may be coroutines",
        "Handle": "a builtin's progress, updated from a callback or a task",
    }

    # Blocking methods whose async form has another name.
    RENAMED = {
        (Registry, "shutdown"): "aclose",  # shuts down, dispatching until reaped, then frees
        (jptool.VfsHost, "run"): "wait",   # until the tool ends; gives its final state
    }

    # Blocking methods with no async form, and why.
    LOOP = "the loop integration, which the async class does itself on the running loop"
    NO_ASYNC_FORM = {
        (Registry, "fileno"): LOOP,
        (Registry, "timeout"): LOOP,
        (Registry, "dispatch"): LOOP,
        (Registry, "wakeup"): LOOP + " (another thread wakes it with "
                                     "loop.call_soon_threadsafe)",
        (Registry, "run"): "waits until no call is in flight, which the library tells only "
                           "its own blocking loop (jpt_registry_run); an asyncio host awaits "
                           "the batches it submitted",
        (jptool.VfsHost, "fileno"): LOOP,
        (jptool.VfsHost, "timeout"): LOOP,
        (jptool.VfsHost, "dispatch"): LOOP,
    }

    # Blocking methods that wait: their async forms are coroutines.
    WAITING = {(Registry, "call"), (Registry, "wait"), (jptool.VfsHost, "run")}

    @staticmethod
    def public(cls):
        return sorted(name for name in dir(cls) if not name.startswith("_"))

    def test_every_public_class_is_wrapped_or_needs_no_async_form(self):
        classes = {name for name, value in vars(jptool).items()
                   if isinstance(value, type) and not name.startswith("_")
                   and value.__module__.split(".")[0] == "jptool"}
        wrapped = {cls.__name__ for cls in self.ASYNC_CLASS}
        self.assertEqual(classes - wrapped, set(self.USED_AS_THEY_ARE))

    def test_every_blocking_method_has_its_async_form(self):
        missing, differing = [], []
        for blocking, wrapper in self.ASYNC_CLASS.items():
            for name in self.public(blocking):
                if (blocking, name) in self.NO_ASYNC_FORM:
                    self.assertFalse(hasattr(wrapper, name), (wrapper, name))
                    continue
                async_name = self.RENAMED.get((blocking, name), name)
                if not hasattr(wrapper, async_name):
                    missing.append(f"{wrapper.__name__}.{async_name} "
                                   f"(for {blocking.__name__}.{name})")
                    continue
                b, a = inspect.getattr_static(blocking, name), \
                    inspect.getattr_static(wrapper, async_name)
                self.assertEqual(isinstance(b, property), isinstance(a, property),
                                 f"{wrapper.__name__}.{async_name}")
                if isinstance(b, property) or (blocking, name) in self.RENAMED:
                    continue
                if list(inspect.signature(b).parameters) != \
                        list(inspect.signature(a).parameters):
                    differing.append(f"{wrapper.__name__}.{name}")
                if (blocking, name) in self.WAITING:
                    self.assertTrue(inspect.iscoroutinefunction(a), f"{wrapper.__name__}.{name}")
        self.assertEqual(missing, [])
        self.assertEqual(differing, [])

    def test_the_lists_name_only_what_exists(self):
        for blocking, name in list(self.RENAMED) + list(self.NO_ASYNC_FORM) + \
                list(self.WAITING):
            self.assertTrue(hasattr(blocking, name), (blocking, name))
        for (blocking, _), async_name in self.RENAMED.items():
            self.assertTrue(inspect.iscoroutinefunction(
                getattr(self.ASYNC_CLASS[blocking], async_name)), async_name)


if __name__ == "__main__":
    unittest.main()
