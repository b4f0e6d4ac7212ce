"""``aspan node`` processes on the hosts: start detached, poll, stop, gather the files.

Per (variant, repetition) a host has one directory ``<work_dir>/<exp>/<stamp>/<variant>/rep<k>/``
holding, for its node N: ``N.node.json`` (uploaded), ``N.log`` (the event log),
``N.done`` (written when its TCP apps finish), ``N.pid`` (the node's process group),
``N.exit`` (the exit code, written when it ends) and ``N.stderr``.

The node runs under ``nohup setsid sh -c '...'``: it survives the SSH session, is the
leader of its own process group (stopped with one ``kill -s TERM -- -PGID``: dash, the ``sh`` that
``sudo -n sh -c`` runs on Debian and Raspberry Pi OS, refuses ``kill -TERM -- -PGID``), and the small
shell around it records the exit code even when the node is killed.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from deploy.hosts import HostError, Remote

STOP_GRACE_S = 5.0
# alive PID: a running process (kill -0 also succeeds on a zombie nobody reaped yet).
# ours PID PIDFILE: alive, and it is the node of that pid file: its working directory is the pid
# file's directory.  A pid file outlives its process, and PIDs are reused: without this check a
# stale pid file would name some unrelated process (and `stop` would signal its group).
ALIVE_FN = ("alive() { s=$(sed 's/.*) //' /proc/\"$1\"/stat 2>/dev/null | cut -c1); "
            "[ -n \"$s\" ] && [ \"$s\" != Z ]; }; "
            "ours() { alive \"$1\" && [ \"$(readlink /proc/\"$1\"/cwd 2>/dev/null)\" = "
            "\"$(cd \"$(dirname \"$2\")\" 2>/dev/null && pwd -P)\" ]; }; ")
FILES = ("log", "stderr", "done", "exit", "node.json", "pcapng")   # pcapng: when capture.enabled


def rep_dir_remote(work_dir: str, rel: str) -> str:
    return str(PurePosixPath(work_dir) / rel)


def start_command(aspan: str, rdir: str, node: str) -> str:
    """Start node ``node`` detached in ``rdir``; prints its pid (its process group) once it runs."""
    q = shlex.quote
    return start_process_command(f"{q(aspan)} node --config {q(node + '.node.json')}", rdir, node)


def start_process_command(cmd: str, rdir: str, node: str) -> str:
    """Start the shell command ``cmd`` detached in ``rdir`` under the name ``node`` (its files
    ``<node>.pid``, ``.exit``, ``.stderr``); prints its pid (its process group) once it runs."""
    q = shlex.quote
    pid = q(node + ".pid")
    inner = f"echo $$ > {pid}; trap true TERM INT; {cmd}; echo $? > {q(node + '.exit')}"
    return (f"cd {q(rdir)} && rm -f {q(node + '.done')} {q(node + '.exit')} {pid} && "
            f"{{ nohup setsid sh -c {q(inner)} > {q(node + '.stderr')} 2>&1 < /dev/null & }} && "
            f"i=0; while [ ! -s {pid} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; cat {pid}")


def poll_command(rdir: str, node: str) -> str:
    """Prints ``done``, ``running`` or ``exited <code>``, then the receiver's last ``deliver`` line if any."""
    q = shlex.quote
    d = q(rdir)
    return (f"{ALIVE_FN}cd {d} && if [ -f {q(node + '.done')} ]; then echo done; "
            f"elif [ -f {q(node + '.pid')} ] && ours \"$(cat {q(node + '.pid')})\" {q(node + '.pid')}; "
            f"then echo running; "
            f"else echo exited $(cat {q(node + '.exit')} 2>/dev/null || echo unknown); fi; "
            f"tail -c 4000 {q(node + '.log')} 2>/dev/null | grep '\"ev\":\"deliver\"' | tail -n 1; true")


def stop_snippet(pidfile: str, grace_s: float) -> str:
    """Shell code: SIGTERM the process group in ``pidfile`` (a shell word), SIGKILL after ``grace_s``."""
    steps = int(grace_s / 0.1)
    return (f"if [ -f {pidfile} ] && P=$(cat {pidfile}) && ours \"$P\" {pidfile}; then "
            f"kill -s TERM -- -\"$P\" 2>/dev/null; i=0; "
            f"while alive \"$P\" && [ $i -lt {steps} ]; do sleep 0.1; i=$((i+1)); done; "
            f"if alive \"$P\"; then kill -s KILL -- -\"$P\" 2>/dev/null; echo killed \"$P\"; "
            f"else echo stopped \"$P\"; fi; else echo not-running; fi")


def stop_pidfile_command(pidfile: str, grace_s: float = STOP_GRACE_S) -> str:
    """Stop the node of ``pidfile``; prints ``stopped PID``, ``killed PID`` or ``not-running``."""
    return ALIVE_FN + stop_snippet(shlex.quote(pidfile), grace_s)


def stop_all_command(work_dir: str, grace_s: float = STOP_GRACE_S) -> str:
    """Stop every node whose pid file is under ``work_dir`` (``aspan deploy stop``)."""
    q = shlex.quote
    return (f"{ALIVE_FN}test -d {q(work_dir)} || exit 0; "
            f"find {q(work_dir)} -name '*.pid' -type f | while read -r f; do "
            f"echo \"$f $({stop_snippet(chr(34) + '$f' + chr(34), grace_s)})\"; done")


def running_nodes_command(work_dir: str) -> str:
    """Prints ``<pidfile> <pid>`` for every live node under ``work_dir``."""
    q = shlex.quote
    return (f"{ALIVE_FN}test -d {q(work_dir)} || exit 0; find {q(work_dir)} -name '*.pid' -type f | "
            "while read -r f; do P=$(cat \"$f\"); ours \"$P\" \"$f\" && echo \"$f $P\"; done; true")


@dataclass
class NodeState:
    state: str                 # done | running | exited
    exit_code: int | None = None
    delivered: int | None = None

    @classmethod
    def parse(cls, out: str) -> "NodeState":
        lines = [ln for ln in out.strip().splitlines() if ln.strip()]
        if not lines:
            return cls("running")
        head = lines[0].split()
        code = None
        if head[0] == "exited" and len(head) > 1 and head[1].lstrip("-").isdigit():
            code = int(head[1])
        delivered = None
        for ln in lines[1:]:
            try:
                delivered = int(json.loads(ln).get("bytes", 0))
            except (ValueError, AttributeError):
                continue
        return cls(head[0], code, delivered)

    def describe_exit(self) -> str:
        if self.exit_code is None:
            return "exited (exit code unknown)"
        if self.exit_code > 128:
            return f"exited with code {self.exit_code} (killed by signal {self.exit_code - 128})"
        return f"exited with code {self.exit_code}"


def start(remote: Remote, rdir: str, node: str, config: Path, key: Path | None = None) -> int | None:
    """Upload the node config (and the experiment key file, mode 0600, which the node deletes once read)
    into ``rdir`` (made by the preflight), start the node detached; returns its pid."""
    if key is not None:
        remote.put(key, f"{rdir}/{node}.key")
    remote.put(config, f"{rdir}/{node}.node.json")
    out = remote.run(start_command(remote.host.aspan, rdir, node)).stdout.strip()
    if remote.dry_run:
        return None
    if not out.isdigit():
        raise HostError(f"node {node} did not start: no pid file in {rdir} after 5 s")
    return int(out)


def poll(remote: Remote, rdir: str, node: str) -> NodeState:
    out = remote.run(poll_command(rdir, node), timeout=max(5.0, remote.host.connect_timeout_s)).stdout
    return NodeState("done") if remote.dry_run else NodeState.parse(out)


def stop(remote: Remote, rdir: str, node: str) -> tuple[str, int | None]:
    """Stop the node (TERM, then KILL after the grace time).

    Returns how (``stopped``, ``killed`` or ``not-running``) and its exit code if it recorded one.
    """
    cmd = (stop_pidfile_command(f"{rdir}/{node}.pid")
           + f"; echo exit $(cat {shlex.quote(rdir + '/' + node + '.exit')} 2>/dev/null)")
    lines = remote.run(cmd, timeout=STOP_GRACE_S + 25).stdout.strip().splitlines()
    how = lines[0].split()[0] if lines and lines[0].strip() else "not-running"
    code = lines[-1].split()[1:] if lines else []
    return how, (int(code[0]) if code and code[0].lstrip("-").isdigit() else None)


def gather(remote: Remote, rdir: str, node: str, local_dir: Path) -> list[str]:
    """Download the node's files that exist on the host into ``local_dir``; returns their names."""
    wanted = {f"{node}.{s}" for s in FILES}
    names = sorted(n for n in remote.listdir(rdir) if n in wanted)
    if remote.dry_run:
        names = sorted(wanted)
    for n in names:
        remote.get(f"{rdir}/{n}", local_dir / n)
    return [] if remote.dry_run else names
