"""`python -m bench [name] [args]`: run one benchmark (default: local_goodput)."""
import importlib
import sys

NAMES = ["local_goodput", "soak_local", "sim_speed", "netns_goodput", "netns_iperf3", "handler_cost", "ab",
         "medium_validate", "medium_capacity", "medium_distance", "fuzz_node", "handler_instructions", "netns_link",
         "netns_medium_capacity", "relay_instructions", "mesh_scale", "hand_mutants", "soak_faults",
         "trace_closed_loop", "trace_netns_loop", "trace_ge_loop", "mutation", "setup_vpi", "suite_time", "tcp_fidelity"]

name = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "local_goodput"
if name not in NAMES:
    sys.exit(f"unknown benchmark {name!r}; expected one of {', '.join(NAMES)}")
args = sys.argv[2:] if len(sys.argv) > 1 and sys.argv[1] == name else sys.argv[1:]
sys.exit(importlib.import_module(f"bench.{name}").main(args))
