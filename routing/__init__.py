"""Overlay routing, one idea per sub-package: medium/, kernel/, overlay/, forwarding/, links/, topology/ (cores, no I/O) and drivers/ (sockets, threads, NFQUEUE, processes, files)."""
