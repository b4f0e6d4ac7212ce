"""Connections to the hosts, parallel execution with per-host results, and ``--dry-run``.

Every task is a function of one :class:`Remote` (a host's Fabric connection).
:func:`on_hosts` runs it on every host in parallel and returns Fabric's
``GroupResult`` (connection -> return value); when any host fails it raises
Fabric's ``GroupException``, whose result maps each failing connection to its
exception and each other one to its value.  :func:`failure_lines` turns that
into one clear line per host.  With ``dry_run`` nothing connects: every command,
upload and download is printed per host instead.
"""
from __future__ import annotations

import shlex
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO, TypeVar

from fabric import Config, Connection
from fabric.exceptions import GroupException
from fabric.group import GroupResult
from invoke.exceptions import CommandTimedOut, UnexpectedExit
from paramiko import RejectPolicy
from paramiko.ssh_exception import (AuthenticationException, BadHostKeyException, NoValidConnectionsError,
                                    SSHException)

from deploy.inventory import Host

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 120.0     # a command still running after this fails (install steps pass more)
TRANSFER_STALL_S = 10.0       # an SFTP operation that gets no data for max(this, 3 x connect timeout) fails

__all__ = ["HostError", "Remote", "DryResult", "on_hosts", "failure_lines", "describe_error", "by_name",
           "GroupException", "GroupResult", "open_remotes", "close_all"]


class HostError(RuntimeError):
    """A task found something wrong on one host (the message says what, without the host name)."""


@dataclass
class DryResult:
    """What a command "returns" under ``--dry-run``: nothing ran, exit 0, no output."""

    command: str
    stdout: str = ""
    stderr: str = ""
    exited: int = 0

    @property
    def ok(self) -> bool:
        return True


def _connection(host: Host) -> Connection:
    """A Fabric connection to ``host`` (not opened yet), with host key checking as the inventory says.

    Fabric alone accepts any host key (paramiko's AutoAddPolicy, no known_hosts
    loaded).  With ``strict_host_keys`` (the default) the host's key must be in
    ``known_hosts`` (default ``~/.ssh/known_hosts``) or the connection is refused;
    only the virtual Pis of the tests turn it off (their host keys are generated
    per test session).
    """
    kwargs: dict[str, Any] = {"allow_agent": host.key_file is None}
    if host.key_file:
        kwargs["key_filename"] = host.key_file
        kwargs["look_for_keys"] = False
    config = Config(overrides={"run": {"hide": True}, "load_ssh_configs": False})
    conn = Connection(host.host, user=host.user, port=host.port, connect_timeout=host.connect_timeout_s,
                      connect_kwargs=kwargs, config=config)
    if host.strict_host_keys:
        known = host.known_hosts or str(Path("~/.ssh/known_hosts").expanduser())
        if Path(known).is_file():
            conn.client.load_system_host_keys(known)
        conn.client.set_missing_host_key_policy(RejectPolicy())
    return conn


class Remote:
    """One host: run a command, put or get a file; or, with ``dry_run``, print what would be done."""

    def __init__(self, host: Host, dry_run: bool = False, echo: TextIO | None = None,
                 echo_lock: threading.Lock | None = None) -> None:
        self.host = host
        self.dry_run = dry_run
        self.echo = echo if echo is not None else (sys.stdout if dry_run else None)
        self._lock = echo_lock or threading.Lock()
        self.conn = _connection(host)

    @property
    def name(self) -> str:
        return self.host.name

    def say(self, what: str) -> None:
        """Print one line for this host (every command under ``--dry-run``)."""
        if self.echo is not None:
            with self._lock:
                print(f"[{self.name}] {what}", file=self.echo, flush=True)

    def wrap(self, cmd: str, root: bool = False) -> str:
        """The exact command line sent: root commands go through ``sudo -n sh -c`` unless the user is root."""
        if root and self.host.sudo:
            return f"sudo -n sh -c {shlex.quote(cmd)}"
        return cmd

    def open(self) -> None:
        """Connect (once) and bound every later channel open by the connect timeout.

        Paramiko waits up to an hour for a channel on a connection whose peer went
        silent; a host that drops off the network must fail in seconds instead.
        """
        self.conn.open()
        transport = self.conn.transport
        if transport is not None:
            transport.channel_timeout = self.host.connect_timeout_s

    def run(self, cmd: str, root: bool = False, warn: bool = False,
            timeout: float | None = DEFAULT_TIMEOUT_S) -> Any:
        """Run ``cmd`` on the host; a non-zero exit raises ``UnexpectedExit`` unless ``warn``.

        A command still running after ``timeout`` seconds raises ``CommandTimedOut``.
        """
        line = self.wrap(cmd, root)
        self.say(f"run: {line}")
        if self.dry_run:
            return DryResult(line)
        self.open()
        return self.conn.run(line, hide=True, warn=warn, timeout=timeout, in_stream=False)

    def _sftp_ready(self) -> None:
        self.open()
        self.conn.sftp().get_channel().settimeout(max(TRANSFER_STALL_S, 3 * self.host.connect_timeout_s))

    def put(self, local: str | Path, remote: str) -> None:
        self.say(f"put: {local} -> {remote}")
        if not self.dry_run:
            self._sftp_ready()
            self.conn.put(str(local), remote)

    def get(self, remote: str, local: str | Path) -> None:
        self.say(f"get: {remote} -> {local}")
        if not self.dry_run:
            self._sftp_ready()
            Path(local).parent.mkdir(parents=True, exist_ok=True)
            self.conn.get(remote, str(local))

    def listdir(self, remote: str) -> list[str]:
        """Names in a directory of the host (SFTP; no shell); [] if it does not exist."""
        self.say(f"list: {remote}")
        if self.dry_run:
            return []
        self._sftp_ready()
        try:
            return self.conn.sftp().listdir(remote)
        except FileNotFoundError:
            return []

    def close(self) -> None:
        try:
            self.conn.close()
        except (OSError, SSHException) as e:
            self.say(f"closing the connection failed: {e}")


def open_remotes(hosts: Iterable[Host], dry_run: bool = False, echo: TextIO | None = None) -> list[Remote]:
    """One :class:`Remote` per host, sharing one print lock (connections open on first use)."""
    lock = threading.Lock()
    return [Remote(h, dry_run=dry_run, echo=echo, echo_lock=lock) for h in hosts]


def close_all(remotes: Iterable[Remote]) -> None:
    for r in remotes:
        r.close()


def on_hosts(remotes: list[Remote], task: Callable[[Remote], T]) -> GroupResult:
    """Run ``task`` on every host in parallel (one after the other under ``--dry-run``).

    Returns Fabric's ``GroupResult`` (connection -> value); raises Fabric's
    ``GroupException`` when any host raised, with every host's value or exception.
    """
    results = GroupResult()

    def one(r: Remote) -> tuple[Remote, Any]:
        try:
            return r, task(r)
        except Exception as e:  # reported per host through GroupException, never swallowed
            return r, e

    if not remotes:
        return results
    if any(r.dry_run for r in remotes):
        pairs = [one(r) for r in remotes]
    else:
        with ThreadPoolExecutor(max_workers=len(remotes)) as pool:
            pairs = list(pool.map(one, remotes))
    for r, value in pairs:
        results[r.conn] = value
    if results.failed:
        raise GroupException(results)
    return results


def by_name(result: GroupResult, remotes: list[Remote]) -> dict[str, Any]:
    """A GroupResult keyed by host name instead of connection."""
    names = {id(r.conn): r.name for r in remotes}
    return {names[id(c)]: v for c, v in result.items()}


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(ln.strip() for ln in (text or "").strip().splitlines()[-lines:] if ln.strip())


def describe_error(e: BaseException) -> str:
    """One line saying what went wrong on a host, in words an operator acts on."""
    if isinstance(e, UnexpectedExit):
        r = e.result
        out = _tail(r.stderr) or _tail(r.stdout) or "no output"
        return f"command failed (exit {r.exited}): {r.command}: {out}"
    if isinstance(e, CommandTimedOut):
        return f"command timed out after {e.timeout} s: {e.result.command}"
    if isinstance(e, NoValidConnectionsError):
        return f"unreachable: {e}"
    if isinstance(e, (socket.timeout, TimeoutError)):
        return f"unreachable: connection timed out ({e})"
    if isinstance(e, AuthenticationException):
        return f"ssh login refused ({e}): check user and key_file in the inventory"
    if isinstance(e, BadHostKeyException):
        return f"host key changed: {e}"
    if isinstance(e, SSHException) and "Timeout opening channel" in str(e):
        return "unreachable: no answer on the open SSH connection (host down or off the network?)"
    if isinstance(e, SSHException) and "known_hosts" in str(e):
        return (f"unknown host key ({e}): connect once with ssh to accept it, or add it with "
                "ssh-keyscan to known_hosts")
    if isinstance(e, HostError):
        return str(e)
    if isinstance(e, OSError):
        return f"unreachable: {e}"
    return f"{type(e).__name__}: {e}"


def failure_lines(exc: GroupException, remotes: list[Remote]) -> list[str]:
    """One line per failing host: ``name (user@host:port): what went wrong``."""
    labels = {id(r.conn): r.host.label() for r in remotes}
    return [f"{labels.get(id(c), c.host)}: {describe_error(v)}" for c, v in exc.result.items()
            if isinstance(v, BaseException)]

