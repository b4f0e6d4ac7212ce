"""Running ip, iptables-legacy, ethtool, tc and sysctl, in the root namespace or in one of ours."""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Sequence

IPTABLES = "iptables-legacy"          # one iptables backend everywhere (the issue: iptables-legacy)
IPTABLES_RESTORE = "iptables-legacy-restore"
TOOLS = ("ip", IPTABLES, IPTABLES_RESTORE, "ethtool", "tc", "sysctl")


class NetnsError(ValueError):
    """The netns backend cannot run (not root, tool missing, leftovers) or a command failed."""


def in_ns(ns: str | None, argv: Sequence[str]) -> list[str]:
    return list(argv) if ns is None else ["ip", "netns", "exec", ns, *argv]


def run(argv: Sequence[str], ns: str | None = None, stdin: str | None = None,
        check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run a command (inside namespace ``ns`` if given); NetnsError with its stderr when it fails."""
    cmd = in_ns(ns, argv)
    try:
        r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise NetnsError(f"{cmd[0]}: not installed ({e})") from None
    except subprocess.TimeoutExpired:
        raise NetnsError(f"{' '.join(cmd)}: no answer after {timeout} s") from None
    if check and r.returncode != 0:
        raise NetnsError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r


def missing_prerequisites() -> list[str]:
    """What keeps the netns backend from running here (empty: it can run)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces, iptables and NFQUEUE need it)")
    for tool in TOOLS:
        if shutil.which(tool) is None:
            missing.append(f"the {tool} command")
    try:
        import netfilterqueue  # noqa: F401
    except ImportError:
        missing.append("the Python package netfilterqueue (pip install -e '.[kernel]'; needs libnetfilter-queue-dev)")
    return missing


def require_prerequisites() -> None:
    missing = missing_prerequisites()
    if missing:
        raise NetnsError("the netns backend needs " + "; ".join(missing))
