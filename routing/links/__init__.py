"""Link models: loss models (loss, trace_loss), the drop-tail link rule (linkem) and Mahimahi traces (mahimahi)."""
