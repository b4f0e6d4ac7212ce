"""The one forwarding step both data planes share (step) and its per-flow log lines (flowlog)."""
