"""User-space TCP as a sans-I/O state machine (Reno and SACK).

Time is always an argument (``now``, seconds); nothing here touches sockets,
threads or the wall clock.  Drivers (the UDP node, the virtual-time simulator)
feed segments and timer expiries in and send out what the connection emits.
"""
from tcp_user.segment import ACK, FIN, RST, SYN, Segment

__all__ = ["Segment", "SYN", "ACK", "FIN", "RST"]
