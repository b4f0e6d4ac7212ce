"""Netns backend pieces that need no root: mesh plan, rules, counters, logs, TCP_INFO sampling."""
import socket
import threading
import pytest
import yaml
from experiments.backends.netns import mesh, state
from experiments.backends.netns.sh import NetnsError
from experiments.backends.netns.tcpapp import (LossCounter, Sampler, payload_chunks, payload_sha256, read_tcpext,
                                               tcp_info)
from tcp_user.bulk import bulk_payload
from experiments.schema import ExperimentError, load_experiment


def cfg(**over):
    doc = {"name": "t", "flows": [{"sender": "A", "receiver": "D", "segments": 10}]}
    doc.update(over)
    return load_experiment(doc, "t.yaml").variants[0].config


def test_plan_of_the_paper_chain():
    p = mesh.plan_mesh(cfg(tcp={"variant": "sack"}), "0a1b2c")
    assert p.nodes == ["A", "B", "C", "D"] and p.forwarders == {"B", "C"} and p.senders == {"A"}
    assert [(l.a, l.b, l.dev_a, l.dev_b) for l in p.links] == [
        ("A", "B", "an0a1b2c0a", "an0a1b2c0b"), ("B", "C", "an0a1b2c1a", "an0a1b2c1b"),
        ("C", "D", "an0a1b2c2a", "an0a1b2c2b")]
    assert all(len(l.dev_a) <= 15 for l in p.links)
    assert p.ns("B") == "aspn-0a1b2c-B"
    assert sorted(p.routes["A"]) == [("10.2.1.2", "10.2.1.2", "an0a1b2c0a"), ("10.2.1.3", "10.2.1.2", "an0a1b2c0a"),
                                     ("10.2.1.4", "10.2.1.2", "an0a1b2c0a")]
    assert p.advmss == 1500 - 48 and p.sack
    batch = mesh._ip_batch(p, "A")
    assert "route add 10.2.1.4/32 via 10.2.1.2 dev an0a1b2c0a src 10.2.1.1 onlink advmss 1452" in batch
    assert "default" not in batch                      # nothing leaves the mesh
    assert "net.ipv4.ip_forward=1" in mesh._sysctls(p, "B") and "net.ipv4.ip_forward=0" in mesh._sysctls(p, "A")
    assert "net.ipv4.tcp_sack=1" in mesh._sysctls(p, "A")


def test_iptables_rules_per_role_and_mode():
    p = mesh.plan_mesh(cfg(loss={"default": {"model": "bernoulli", "rate": 0.005}}), "0a1b2c")
    a, b, d = (mesh._iptables_rules(p, n) for n in "ABD")
    assert "-A OUTPUT -o an0a1b2c+ -p tcp -m mark ! --mark 0xa5 -j NFQUEUE --queue-num 0" in a
    assert "FORWARD" not in a and "-A FORWARD -j NFQUEUE --queue-num 0" in b and "OUTPUT" not in b
    # forwarders apply the loss model in their handler; the endpoints use the statistic match
    assert "-A INPUT -i an0a1b2c+ -j NFQUEUE --queue-num 0" in b and "statistic" not in b
    assert "NFQUEUE" not in d and "INPUT" not in a
    assert "--probability 0.005000" in a and "--probability 0.005000" in d
    assert p.handler_loss == {"B", "C"} and p.loss_rates == {"A": 0.005, "D": 0.005}
    ge = mesh.plan_mesh(cfg(loss={"default": {"model": "bernoulli", "rate": 0.01},
                                  "nodes": {"D": {"model": "gilbert-elliott"}}}), "0a1b2c")
    assert ge.handler_loss == {"B", "C", "D"} and "-A INPUT" in mesh._iptables_rules(ge, "D")
    down = mesh.plan_mesh(cfg(loss={"default": {"model": "none"},
                                    "nodes": {"D": {"model": "none", "down": [[1, 2]]}}}), "0a1b2c")
    assert down.handler_loss == {"B", "C", "D"} and not down.loss_rates   # down intervals need the handler
    perfect = mesh.plan_mesh(cfg(snoop={"policy": "perfect"}), "0a1b2c")
    assert perfect.handler_loss == {"A", "B", "C"}            # the sender's layer answers dupacks
    acc = mesh.plan_mesh(cfg(netns={"handlers": "accept"}), "0a1b2c")
    assert [mesh.queued_input(acc, n) for n in "ABCD"] == [False, True, True, False]
    k = mesh.plan_mesh(cfg(netns={"handlers": "kernel"}, loss={"default": {"model": "bernoulli", "rate": 0.005}}),
                       "0a1b2c")
    rules = mesh._iptables_rules(k, "C")
    assert "NFQUEUE" not in rules
    assert "-A PREROUTING -i an0a1b2c+ -m statistic --mode random --probability 0.005000 -j DROP" in rules


def test_the_plan_refuses_what_the_backend_cannot_do():
    with pytest.raises(NetnsError, match="outside the test range"):
        mesh.plan_mesh(cfg(topology={"chain": ["A", "B"], "addresses": {"A": "192.168.1.1"}},
                           flows=[{"sender": "A", "receiver": "B"}]), "0a1b2c")
    with pytest.raises(NetnsError, match="needs netns.handlers: snoop"):
        mesh.plan_mesh(cfg(netns={"handlers": "kernel"}, loss={"default": {"model": "gilbert-elliott"}}), "0a1b2c")
    with pytest.raises(NetnsError, match="0..15"):
        mesh.plan_mesh(cfg(snoop={"snoop_after": 20}), "0a1b2c")


def test_the_netns_schema_section():
    c = cfg()
    assert c["netns"] == {"handlers": "snoop", "congestion": "reno", "traffic": "bulk", "option": 94,
                          "rate_mbit": 0.0, "mtu": 1500, "cwnd_poll_ms": 5.0, "queue_maxlen": 4096, "realtime": False}
    with pytest.raises(ExperimentError, match="netns.option"):
        cfg(netns={"option": 7})
    with pytest.raises(ExperimentError, match="netns.congestion"):
        cfg(netns={"congestion": "vegas"})


def test_names_and_leftover_matching():
    assert state.run_id_of("aspn-0a1b2c-A") == "0a1b2c"
    assert state.run_id_of("aspv-17c2-A") is None and state.run_id_of("aspn-xyz-A") is None
    assert len(state.new_run_id()) == 6
    with pytest.raises(NetnsError):
        state.veth_name("0a1b2c", 1234567, "a")


def test_nfnetlink_queue_counters_parse():
    text = "    0  28042     3 2  4016     5    17     7520  1\n    1  1 0 2 4016 0 0 9 1\n"
    c = mesh.parse_nfq(text)
    assert c[0]["queue_dropped"] == 5 and c[0]["user_dropped"] == 17 and c[0]["waiting"] == 3
    assert set(c) == {0, 1} and mesh.parse_nfq("garbage\n") == {}


def test_loss_counter_counts_recoveries_and_timeouts():
    reads = iter([{"TCPRenoRecovery": 1, "TCPSackRecovery": 2, "TCPTimeouts": 0},
                  {"TCPRenoRecovery": 1, "TCPSackRecovery": 5, "TCPTimeouts": 1},
                  {"TCPRenoRecovery": 2, "TCPSackRecovery": 5, "TCPTimeouts": 1}])
    lc = LossCounter(lambda: next(reads))
    assert lc.new_events() == (3, 1)
    assert lc.new_events() == (1, 0)
    assert lc.totals()["TCPSackRecovery"] == 3


def test_tcpext_counters_of_this_namespace_are_readable():
    c = read_tcpext()
    assert "TCPTimeouts" in c and "TCPSackRecovery" in c
    assert set(mesh.TCP_EXT_COUNTERS) <= set(c)


def test_the_sampler_logs_cwnd_in_bytes_with_mss_from_tcp_info():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    def drain():
        got = 0
        while got < 200000:
            got += len(conn.recv(1 << 16))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    cli.sendall(b"x" * 200000)
    reader.join(timeout=10)
    events = []
    s = Sampler("f", lambda now, ev, **kw: events.append((ev, kw)), 0.005,
                LossCounter(lambda: {}), cli)
    s.sample(1.0)
    info = tcp_info(cli)
    assert info["snd_mss"] > 0 and info["snd_cwnd"] > 0
    ev, kw = events[0]
    assert ev == "cwnd" and kw["cwnd"] % kw["mss"] == 0 and kw["ssthresh"] > 0 and kw["flow"] == "f"
    s.sample(1.1)
    assert len(events) == 1 or events[1][1] != kw        # logged again only on a change
    for sock in (cli, conn, srv):
        sock.close()


@pytest.mark.parametrize("size", [0, 1, 5, 1 << 20, (1 << 20) + 3, 3 * (1 << 20) + 7])
def test_the_payload_in_pieces_is_the_bulk_payload_of_the_other_backends(size):
    assert b"".join(payload_chunks(7, size)) == bulk_payload(7, size)
    import hashlib
    assert payload_sha256(7, size) == hashlib.sha256(bulk_payload(7, size)).hexdigest()


def test_the_iperf3_client_retries_while_the_server_refuses(tmp_path):
    """iperf3 3.12 with -J exits 0 on a refused connection (the error is in its JSON): the client is run
    again while the server does not listen yet, and the refusal is returned once the wait is over."""
    from experiments.backends.netns.tcpapp import run_iperf3_client
    count = tmp_path / "calls"
    fake = tmp_path / "iperf3"
    fake.write_text('#!/bin/sh\necho x >> "$1"\nif [ "$(wc -l < "$1")" -le "$2" ]; then\n'
                    '  echo \'{"error": "unable to connect to server: Connection refused"}\'\n'
                    'else\n  echo \'{"end": {}}\'\nfi\nexit 0\n')
    fake.chmod(0o755)
    r = run_iperf3_client([str(fake), str(count), "3"], wait_s=30.0)
    assert r.stdout.strip() == '{"end": {}}' and len(count.read_text().split()) == 4
    count.unlink()
    r = run_iperf3_client([str(fake), str(count), "1000"], wait_s=0.3)
    assert "refused" in r.stdout and 2 <= len(count.read_text().split()) <= 10


# ---- graphs (issue 22): a veth pair per edge, kernel routes from route_tables -------------------------
def grid(rows: int, cols: int) -> tuple[list[str], list[list[str]]]:
    """Nodes ``G<r><c>`` row by row, each linked to its right and lower neighbour."""
    names = [f"G{r}{c}" for r in range(rows) for c in range(cols)]
    links = [[f"G{r}{c}", f"G{r}{c + 1}"] for r in range(rows) for c in range(cols - 1)]
    links += [[f"G{r}{c}", f"G{r + 1}{c}"] for r in range(rows - 1) for c in range(cols)]
    return names, links


DIAMOND = {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]}


def assert_plan_is_the_graph(p: mesh.MeshPlan, c: dict) -> None:
    """One veth pair per edge, each end in its node; every node's kernel routes are its route table."""
    from experiments.build import route_tables
    edges = {frozenset(l) for l in c["topology"]["links"]}
    assert len(p.links) == len(edges) and {frozenset((l.a, l.b)) for l in p.links} == edges
    devs = [l.dev_a for l in p.links] + [l.dev_b for l in p.links]
    assert len(set(devs)) == len(devs) and all(len(d) <= 15 for d in devs)
    for l in p.links:
        assert p.devs[l.a][l.b] == l.dev_a and p.devs[l.b][l.a] == l.dev_b
    name_of = {a: n for n, a in p.addrs.items()}
    tables = route_tables(c)
    for n in p.nodes:
        nbrs = {m for e in edges if n in e for m in e if m != n}
        assert set(p.devs[n]) == nbrs                                  # one veth per neighbour
        want = {dst: via for dst, via in tables[n].as_dict().items() if dst != p.addrs[n]}
        assert {dst: via for dst, via, _ in p.routes[n]} == want and len(p.routes[n]) == len(p.nodes) - 1
        assert all(dev == p.devs[n][name_of[via]] for _, via, dev in p.routes[n])   # out of the veth to the next hop
        batch = mesh._ip_batch(p, n)
        assert batch.count("addr add") == len(nbrs) and "default" not in batch
        for dst, via, dev in p.routes[n]:
            line = (f"route add {dst}/32 dev {dev} src {p.addrs[n]} advmss {p.advmss}" if dst == via else
                    f"route add {dst}/32 via {via} dev {dev} src {p.addrs[n]} onlink advmss {p.advmss}")
            assert line in batch


def test_a_diamond_gets_a_veth_pair_per_edge_and_its_routes():
    c = cfg(topology=DIAMOND)
    p = mesh.plan_mesh(c, "0a1b2c")
    assert_plan_is_the_graph(p, c)
    # links in topology.links' order (sorted pairs): A-B, A-C, B-D, C-D
    assert [(l.a, l.b, l.dev_a) for l in p.links] == [("A", "B", "an0a1b2c0a"), ("A", "C", "an0a1b2c1a"),
                                                      ("B", "D", "an0a1b2c2a"), ("C", "D", "an0a1b2c3a")]
    assert p.forwarders == {"A", "B", "C", "D"}                          # every node has two neighbours
    # two equal paths A -> D: the tie-break takes the neighbour first in node order, B; D -> A likewise
    assert ("10.2.1.4", "10.2.1.2", "an0a1b2c0a") in p.routes["A"]
    assert ("10.2.1.1", "10.2.1.2", "an0a1b2c2b") in p.routes["D"]
    assert ("10.2.1.3", "10.2.1.3", "an0a1b2c1a") in p.routes["A"]       # C is A's neighbour, on its own veth
    assert ("10.2.1.2", "10.2.1.1", "an0a1b2c1b") in p.routes["C"]       # C reaches B through A
    assert "net.ipv4.ip_forward=1" in mesh.sysctls(p, "C")
    assert set(mesh.link_conf(mesh.plan_mesh(cfg(topology=DIAMOND, link={"delay_ms": 1}), "0a1b2c"),
                              "A")["in"]) == {"an0a1b2c0a", "an0a1b2c1a"}   # a link shaper per veth


def test_a_3x3_grid_gets_a_veth_pair_per_edge_and_its_routes():
    names, links = grid(3, 3)
    c = cfg(topology={"nodes": names, "links": links}, flows=[{"sender": "G00", "receiver": "G22"},
                                                              {"sender": "G20", "receiver": "G02"}])
    p = mesh.plan_mesh(c, "0a1b2c")
    assert len(p.links) == 12
    assert_plan_is_the_graph(p, c)
    assert len(p.devs["G11"]) == 4 and len(p.devs["G00"]) == 2 and len(p.devs["G01"]) == 3
    assert p.senders == {"G00", "G20"} and p.forwarders == set(names)
    # a sender that also relays: OUTPUT (its own data) and FORWARD (the others') are both queued
    rules = mesh._iptables_rules(p, "G20")
    assert "-A FORWARD -j NFQUEUE --queue-num 0" in rules and "-A OUTPUT -o an0a1b2c+ -p tcp" in rules


def _chain(n: int) -> list[str]:
    return [f"N{i}" for i in range(n)]


def test_the_hop_limit_is_the_longest_flow_route_not_the_node_count():
    """The IPv4 option counts hops in 4 bits: a flow's route may have 15 hops, not 16; node count is free."""
    sixteen = _chain(16)
    p = mesh.plan_mesh(cfg(topology={"chain": sixteen}, flows=[{"sender": "N0", "receiver": "N15"}]), "0a1b2c")
    assert len(p.links) == 15
    with pytest.raises(NetnsError, match=r"flows\[0\]: the route N0 -> N1 -> .* -> N16 has 16 hops.*4-bit hops field"):
        mesh.plan_mesh(cfg(topology={"chain": _chain(17)}, flows=[{"sender": "N0", "receiver": "N16"}]), "0a1b2c")
    # 17 nodes are fine as long as no flow's route is longer than 15 hops (a route no flow takes carries no option)
    p = mesh.plan_mesh(cfg(topology={"chain": _chain(17)}, flows=[{"sender": "N0", "receiver": "N15"}]), "0a1b2c")
    assert len(p.nodes) == 17
    names, links = grid(5, 5)                                    # 25 nodes, the longest route 8 hops
    assert len(mesh.plan_mesh(cfg(topology={"nodes": names, "links": links},
                                  flows=[{"sender": "G00", "receiver": "G44"}]), "0a1b2c").nodes) == 25


def test_the_runner_refuses_a_too_long_route_before_the_run():
    from experiments.build import refuse_route_hops
    from experiments.runner import check_backend_support
    doc = {"name": "t", "topology": {"chain": _chain(18)},
           "flows": [{"sender": "N0", "receiver": "N2"}, {"sender": "N17", "receiver": "N1"}]}
    exp = load_experiment(doc, "t.yaml")
    with pytest.raises(ExperimentError, match=r"variants\[.*\]\.flows\[1\].*N17 -> N16 .* -> N1 has 16 hops"):
        check_backend_support(exp, "netns")
    variants = [(v.name, v.config) for v in exp.variants]
    with pytest.raises(ExperimentError, match="4-bit hops field"):
        refuse_route_hops("t.yaml", [(n, {**c, "pi": {**c["pi"], "data_plane": "kernel"}}) for n, c in variants],
                          "pi", ExperimentError)
    refuse_route_hops("t.yaml", variants, "pi", ExperimentError)      # the UDP overlay carries no IPv4 option
    for backend in ("sim", "local"):
        check_backend_support(exp, backend)


@pytest.mark.parametrize("key,value", [("init_cwnd", 10), ("rcv_buffer_segments", 20), ("min_rto_s", 1.0),
                                       ("initial_rto_s", 3.0), ("max_rto_s", 120.0), ("snack", True),
                                       ("delayed_ack", True), ("delack_s", 0.04), ("limited_transmit", True),
                                       ("rack", True), ("timestamps", True), ("newreno", True), ("frto", True)])
def test_kernel_tcp_refuses_the_user_space_tcps_fields_it_would_ignore(key, value, tmp_path):
    """netns and the Pis' kernel plane run Linux's TCP: a user-space TCP field set away from its default is
    refused before the run (on a diamond, in the variant that sets it), by ``run`` and ``validate`` alike; the
    overlay backends take it."""
    from experiments.build import KERNEL_TCP_OWN
    from experiments.runner import check_backend_support, run_experiment
    assert key in KERNEL_TCP_OWN
    doc = {"name": "t", "topology": {"nodes": ["A", "B", "C", "D"],
                                     "links": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]},
           "flows": [{"sender": "A", "receiver": "D"}, {"sender": "D", "receiver": "A"}],
           "variants": [{"name": "plain"}, {"name": "set", "tcp": {"variant": "sack", key: value}}]}
    exp = load_experiment(doc, "t.yaml")
    want = rf"t.yaml: variants\[set\]\.tcp\.{key}: {value!r} is a setting of the user-space TCP; on backend netns"
    with pytest.raises(ExperimentError, match=want):
        check_backend_support(exp, "netns")
    with pytest.raises(ExperimentError, match=want):
        run_experiment(exp, backend="netns", out=tmp_path, plot=False, progress=lambda s: None)
    assert not any(tmp_path.iterdir())
    kernel_pi = load_experiment({**doc, "pi": {"data_plane": "kernel"}}, "t.yaml")
    with pytest.raises(ExperimentError, match=rf"variants\[set\]\.tcp\.{key}: .* on backend pi"):
        check_backend_support(kernel_pi, "pi")
    for backend in ("sim", "local", "pi"):          # the user-space TCP runs there (pi: the UDP overlay)
        check_backend_support(exp, backend)
    plain = load_experiment({**doc, "variants": [{"name": "plain", "tcp": {"variant": "sack"}}]}, "t.yaml")
    check_backend_support(plain, "netns")           # tcp.variant sack is the kernel's net.ipv4.tcp_sack


def test_validate_refuses_what_run_refuses_for_kernel_tcp(tmp_path):
    from experiments.cli import main
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump({"backend": "netns", "tcp": {"rack": True}}))
    assert main(["validate", str(f)]) == 2
    assert main(["validate", "--backend", "sim", str(f)]) == 0
