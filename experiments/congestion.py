"""The kernel's congestion controls: which ones ``netns.congestion`` may name, and whether a kernel has one.

Linux lists the congestion controls it has loaded in ``/proc/sys/net/ipv4/tcp_available_congestion_control``; one
built as a module (``tcp_bbr.ko``) is loaded by the first ``setsockopt(TCP_CONGESTION)`` of a process with
CAP_NET_ADMIN (the netns backend's senders run as root), so a control counts as there when it is listed, built in
(``modules.builtin``) or present as a module of the running kernel.  Anything else is refused before the run
starts, naming the field and what the kernel offers (the netns backend here; the Pis in the doctor's
``congestion`` check, deploy/doctor.py).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: the controls a kernel sender may run: RFC 5681 Reno, RFC 9438 CUBIC, BBR (Linux's tcp_bbr, v1)
KERNEL_CONGESTION = ("reno", "cubic", "bbr")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
MODULES = Path("/lib/modules")


def kernel_has(name: str, available: str, modules: Iterable[str]) -> bool:
    """``name`` is loaded (in ``available``, the proc file's text) or loadable (``tcp_<name>`` among the running
    kernel's module and built-in names, without their ``.ko`` suffixes)."""
    return name in available.split() or f"tcp_{name}" in set(modules)


def module_names(release: str | None = None, root: Path = MODULES) -> set[str]:
    """The running kernel's module names under net/ipv4 (file names without ``.ko``, ``.ko.xz``, ...) and its built-in
    ones (modules.builtin); empty where the directory cannot be read."""
    base = root / (release or os.uname().release)
    ipv4 = base / "kernel" / "net" / "ipv4"
    names = {p.name.split(".ko")[0] for p in ipv4.glob("tcp_*.ko*")} if ipv4.is_dir() else set()
    builtin = base / "modules.builtin"
    if builtin.is_file():
        names.update(Path(line).name.split(".ko")[0] for line in builtin.read_text().split())
    return names


def read_available(path: Path = AVAILABLE) -> str:
    """The proc file's text; empty where it cannot be read (then only the modules count)."""
    try:
        return path.read_text()
    except OSError:
        return ""


def refuse_congestion(source: str, variants: Sequence[tuple[str, Any]], backend: str, error: type[Exception],
                      available: str | None = None, modules: Iterable[str] | None = None) -> None:
    """On netns (this machine's kernel runs the senders): every variant's ``netns.congestion`` must be one the
    kernel has (:func:`kernel_has`), else an ``error`` naming the field and what the kernel offers."""
    if backend != "netns":
        return
    text = read_available() if available is None else available
    mods = module_names() if modules is None else set(modules)
    for name, cfg in variants:
        cc = cfg.netns.congestion
        if not kernel_has(cc, text, mods):
            offered = text.split() or ["(none listed)"]
            raise error(source, f"variants[{name}].netns.congestion",
                        f"this kernel has no {cc!r} congestion control: it offers {' '.join(offered)} and no "
                        f"tcp_{cc} module (a kernel with CONFIG_TCP_CONG_{cc.upper()}, or modprobe tcp_{cc})")
