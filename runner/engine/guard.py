"""A tiny watchdog that runs one engine and takes it down when the runner goes away.

    python -m runner.engine.guard --watch RUNNER_PID [--grace S] [--cleanup JSON_ARGV] -- ENGINE
    ARGV...

Why a separate process: nothing inside the runner can act once the runner is SIGKILLed (or the
OOM killer takes it), and a vLLM engine left behind holds a GPU and a port until someone kills it
by hand. The runner starts this guard as the leader of a new process group (in the runner's
session, so the engine shares the runner's scheduler autogroup); the guard starts the engine
inside that group, so "the engine" is exactly one process group that can be signalled as a
whole without ever matching processes by name.

The guard:
- marks itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so engine descendants that are
  orphaned (vLLM's EngineCore and worker processes, if the API server dies first) are re-parented
  to the guard instead of init and stay findable as its descendants;
- watches the runner's pid through a pidfd (poll fallback). PR_SET_PDEATHSIG is not used: it
  fires when the *thread* that forked the guard exits, and the runner starts replicas from
  short-lived threads;
- on SIGTERM/SIGINT (the runner's orderly stop) or the runner's death: SIGTERM to the group and
  every descendant, SIGKILL after the grace period, then runs the optional cleanup command
  (`docker rm -f NAME` for the docker style, whose container is not a descendant);
- exits with the engine's exit status when the engine exits by itself (start-up failure), after
  killing whatever the engine left in the group.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
from contextlib import suppress

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.2
# When the runner itself died nobody waits for a clean shutdown; keep the kill quick.
ORPHAN_GRACE_S = 3.0


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    _set_subreaper()
    stop_requested = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)

    # Same process group as the guard (the runner made the guard a group leader).
    engine = subprocess.Popen(args.command, stdin=subprocess.DEVNULL)
    watcher = _RunnerWatcher(args.watch)
    try:
        while True:
            code = engine.poll()
            if code is not None:
                _shutdown(engine, grace_s=args.grace)
                _run_cleanup(args.cleanup)
                return code if code >= 0 else 128 - code
            if stop_requested:
                _shutdown(engine, grace_s=args.grace)
                _run_cleanup(args.cleanup)
                return 0
            if watcher.runner_gone(POLL_S):
                print(f"[headroom guard] runner {args.watch} is gone; stopping", flush=True)
                _shutdown(engine, grace_s=min(args.grace, ORPHAN_GRACE_S))
                _run_cleanup(args.cleanup)
                return 0
    finally:
        watcher.close()


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m runner.engine.guard")
    parser.add_argument("--watch", type=int, required=True, help="pid of the runner")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("--cleanup", default=None, help="JSON argv to run after the engine stops")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("no engine command after --")
    args.cleanup = json.loads(args.cleanup) if args.cleanup else None
    return args


def _set_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the process-group kill still covers well-behaved engines


class _RunnerWatcher:
    """Tells whether the runner process still exists, waiting up to a timeout."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd: int | None = None
        try:
            self.fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.fd = None  # old kernel: poll getppid() below
        self.original_parent = os.getppid()

    def runner_gone(self, timeout_s: float) -> bool:
        if self.fd is not None:
            ready, _, _ = select.select([self.fd], [], [], timeout_s)
            return bool(ready)
        time.sleep(timeout_s)
        if os.getppid() != self.original_parent:
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        return False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _shutdown(engine: subprocess.Popen, *, grace_s: float) -> None:
    """SIGTERM the group and all descendants, SIGKILL what is left after grace_s, reap them."""
    _signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap()
        if not _descendants(with_finished=True):
            return
        time.sleep(0.05)
    _signal_all(signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while _descendants(with_finished=True) and time.monotonic() < deadline:
        _reap()
        time.sleep(0.05)
    _reap()


def _signal_all(signum: int) -> None:
    """Signal every process of our group except us, plus descendants that left the group."""
    me, pgid = os.getpid(), os.getpgid(0)
    table = _process_table()
    targets = {
        pid for pid, (_, group, done) in table.items() if group == pgid and pid != me and not done
    }
    targets.update(_descendants(table))
    for pid in targets:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _process_table() -> dict[int, tuple[int, int, bool]]:
    """pid -> (ppid, pgid, finished) of every process, read from /proc.

    A process whose main thread has exited shows as a zombie while its other threads still run
    (vLLM's API server does this while shutting down): it counts as finished only when it has
    no thread left besides the zombie leader, so the guard keeps waiting for it and for its
    children.
    """
    table: dict[int, tuple[int, int, bool]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
            # Fields after the parenthesised command name: state, ppid, pgrp, ...
            fields = stat.rsplit(")", 1)[1].split()
            finished = fields[0] in ("Z", "X") and len(os.listdir(f"/proc/{entry}/task")) <= 1
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), int(fields[2]), finished)
    return table


def _descendants(
    table: dict[int, tuple[int, int, bool]] | None = None, *, with_finished: bool = False
) -> list[int]:
    """Descendants of the guard (orphans included, thanks to the subreaper flag).

    Finished ones (zombies) are left out unless with_finished: the shutdown waits for those too,
    reaping them as they are re-parented to the guard, so none is left for init to collect.
    """
    table = _process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            if with_finished or not table[child][2]:
                found.append(child)
            stack.append(child)
    return found


def _reap() -> None:
    """Collect exited children (direct and adopted orphans) so they do not linger as zombies."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _run_cleanup(cleanup: list[str] | None) -> None:
    if not cleanup:
        return
    try:
        subprocess.run(cleanup, stdin=subprocess.DEVNULL, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"[headroom guard] cleanup {cleanup} failed: {exc}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
