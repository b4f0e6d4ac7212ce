"""bench/tcp_fidelity.py's own rules (the bench runs on demand; its case files are checked here)."""
from __future__ import annotations

from bench.tcp_fidelity import Case, experiment, set_field
from experiments.runner import check_backend_support
from experiments.schema import load_experiment


def test_set_gives_the_user_space_tcp_fields_to_the_sim_side_only():
    """``--set tcp.rack=true`` changes the sim's TCP; the netns side's file stays one the netns backend runs
    (it refuses the user-space TCP's fields), while other fields reach both sides."""
    doc = experiment(Case("diamond", "relay", "5"), reps=1, segments=100, max_duration=10.0, carrier="link",
                     variant="sack")
    sides = {}
    for backend in ("sim", "netns"):
        d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in doc.items()}
        for item in ("tcp.rack=true", "tcp.limited_transmit=true", "limits.max_duration_s=20"):
            set_field(d, item, backend)
        sides[backend] = d
    assert sides["sim"]["tcp"]["rack"] is True and sides["sim"]["tcp"]["limited_transmit"] is True
    assert "rack" not in sides["netns"]["tcp"] and "limited_transmit" not in sides["netns"]["tcp"]
    assert sides["sim"]["limits"]["max_duration_s"] == sides["netns"]["limits"]["max_duration_s"] == 20
    for backend, d in sides.items():
        check_backend_support(load_experiment(d, f"{backend}.yaml"), backend)
