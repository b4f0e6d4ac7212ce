"""Mutation testing of the protocol cores with mutmut (issue 30, item 3; docs/MUTATION.md).

``python -m bench mutation [MODULE ...] [--report | --resume] [--survivors] [--equivalents]`` (or ``make mutation``)
runs mutmut on each core module named (default: all of ``MODULE_TESTS``), one module at a time, under
``nice -n 19`` with one worker, over the unit tests that cover that module only (``MODULE_TESTS``; no
root, no real-time tests).  It is slow and not run in CI; ``pip install -e '.[mutation]'`` installs mutmut.

Each module runs in a copy of the tree, ``.mutation/<module>/`` (gitignored, kept for triage:
``cd .mutation/<module> && mutmut show NAME``), whose pyproject.toml gets a ``[tool.mutmut]`` table
naming that module and its tests; the work tree itself is never written.  Per module it prints
mutants, killed (timeouts count as killed: the tests did not pass), equivalent (``EQUIVALENT``, each
with its reason and the mutated line it expects, so a stale entry is reported), survived (including
mutants no selected test reaches) and the score killed / (mutants - equivalent).  It exits 1 when a
module scores below ``TARGET`` or an equivalent entry no longer matches its mutant.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
TARGET = 0.90

#: core module -> the unit-test files that exercise it (the selection mutmut's stats run traces)
MODULE_TESTS: dict[str, list[str]] = {
    "aspan/agent.py": ["tests/test_aspan_agent.py", "tests/test_engine.py", "tests/test_bounded_state.py",
                       "tests/test_snoop_classic.py", "tests/test_snack.py", "tests/test_slack_ackall.py",
                       "tests/test_aspan_agent_mutants.py"],
    # (tests/test_linkstate.py, which routes by these estimates, runs whole meshes in virtual and real
    # time: 4 to 10 s a test, for every mutant of the estimator; it is left out)
    "etx/estimator.py": ["tests/test_etx_estimator.py", "tests/test_etx_mutants.py"],
    "aspan/adaptive.py": ["tests/test_adaptive_qos.py", "tests/test_rules_adaptive.py"],
    "tcp_user/congestion.py": ["tests/test_tcp_rules.py", "tests/test_tcp_parts.py", "tests/test_tcp_reno.py",
                               "tests/test_tcp_sack.py", "tests/test_tcp_harness.py", "tests/test_tcp_transfer.py",
                               "tests/test_congestion_mutants.py", "tests/test_tcp_cwnd_limited.py",
                               "tests/test_rules_congestion.py"],
    # (tests/test_header_extremes.py and tests/test_flowlog.py drive whole nodes, 2 to 10 s a test, for
    # every mutant of the step; they are left out)
    "routing/forwarding/step.py": ["tests/test_step_conformance.py", "tests/test_drop_log.py", "tests/test_linkem.py",
                        "tests/test_step_mutants.py"],
    "routing/overlay/auth.py": ["tests/test_auth.py", "tests/test_wire.py", "tests/test_auth_mutants.py"],
    # (tests/test_medium_rates.py with its whole runs left out: DESELECT)
    "routing/medium/dcf.py": ["tests/test_medium.py", "tests/test_medium_rts.py", "tests/test_medium_sinr.py",
                          "tests/test_medium_rates.py", "tests/test_medium_rts_table1.py", "tests/test_medium_queue.py",
                          "tests/test_rules_medium.py"],
    "routing/links/loss.py": ["tests/test_loss.py", "tests/test_loss_packet_ge.py", "tests/test_rules_loss.py"],
    # the other cores of aspan/ and tcp_user/
    "aspan/policy.py": ["tests/test_aspan_policy.py", "tests/test_aspan_agent.py", "tests/test_snoop_classic.py",
                        "tests/test_rules_policy.py"],
    "aspan/fields.py": ["tests/test_aspan_policy.py", "tests/test_aspan_agent.py", "tests/test_rules_fields.py"],
    "aspan/ackall.py": ["tests/test_slack_ackall.py", "tests/test_engine_schemes.py", "tests/test_kernel_schemes.py",
                        "tests/test_rules_ackall.py"],
    # (the snoop agents of paper 004 and SNACK subclass the classic one: their tests drive it too)
    "aspan/snoop_classic.py": ["tests/test_snoop_classic.py", "tests/test_slack_ackall.py", "tests/test_snack.py",
                               "tests/test_engine_schemes.py", "tests/test_kernel_schemes.py",
                               "tests/test_bounded_state.py", "tests/test_rules_snoop_classic.py"],
    "aspan/cache.py": ["tests/test_aspan_agent.py", "tests/test_aspan_agent_mutants.py", "tests/test_snoop_classic.py",
                       "tests/test_rules_cache.py"],
    "aspan/snack.py": ["tests/test_snack.py", "tests/test_engine_schemes.py", "tests/test_rules_snack.py"],
    "aspan/slack.py": ["tests/test_slack_ackall.py", "tests/test_engine_schemes.py", "tests/test_kernel_schemes.py",
                       "tests/test_rules_slack.py"],
    "aspan/events.py": ["tests/test_eventlog.py", "tests/test_aspan_agent_mutants.py", "tests/test_step_mutants.py",
                        "tests/test_rules_events.py"],
    "tcp_user/sack.py": ["tests/test_tcp_sack.py", "tests/test_tcp_parts.py", "tests/test_congestion_mutants.py",
                         "tests/test_rules_sack.py"],
    # the modules later issues added (issue 30, item 4)
    "routing/medium/rates.py": ["tests/test_rates.py", "tests/test_rules_rates.py"],
    "routing/medium/rate_control/minstrel.py": ["tests/test_minstrel.py", "tests/test_rules_minstrel.py"],
    "routing/medium/error_model.py": ["tests/test_error_model.py", "tests/test_rules_error_model.py"],
    "routing/medium/propagation.py": ["tests/test_error_model.py", "tests/test_rules_propagation.py"],
    "routing/medium/reception.py": ["tests/test_medium_sinr.py", "tests/test_rules_reception.py"],
    "routing/drivers/station.py": ["tests/test_station.py", "tests/test_rules_station.py"],
    "routing/topology/linkstate.py": ["tests/test_linkstate.py", "tests/test_babel.py", "tests/test_rules_linkstate.py"],
    "routing/links/trace_loss.py": ["tests/test_trace.py", "tests/test_rules_trace_loss.py"],
    # (tests/test_mesh_topology.py runs meshes too, a minute for the file: left out)
    "routing/topology/graph.py": ["tests/test_routes.py", "tests/test_rules_graph.py"],
    "routing/topology/routes.py": ["tests/test_routes.py", "tests/test_rules_graph.py"],
    # the settings and registries of aspan/ and tcp_user/, the bulk application, the prober's timing
    # (tests/test_registries.py reads docs/DESIGN.md, which the mutation tree has not)
    "aspan/schemes.py": ["tests/test_engine_schemes.py", "tests/test_rules_settings.py"],
    "aspan/scheme_config.py": ["tests/test_engine_schemes.py", "tests/test_snoop_classic.py",
                               "tests/test_rules_settings.py"],
    "tcp_user/config.py": ["tests/test_tcp_config.py", "tests/test_rules_settings.py"],
    "tcp_user/bulk.py": ["tests/test_bulk.py", "tests/test_rules_bulk.py"],
    "etx/drivers/prober.py": ["tests/test_rules_settings.py"],
    # the link rules (issues 11 and 25): the drop-tail link, the local backend's held datagrams, Mahimahi's
    # opportunities, recorded signals (the whole runs of these files are marked slow or root: left out)
    "routing/links/linkem.py": ["tests/test_linkem.py", "tests/test_udp_link.py", "tests/test_mahimahi.py"],
    "routing/overlay/udp_link.py": ["tests/test_udp_link.py"],
    "routing/links/mahimahi.py": ["tests/test_mahimahi.py", "tests/test_rules_mahimahi.py"],
    # the trace files' reader and writer (moved out of mahimahi.py and trace_loss.py, issue 38): their rules
    "tracefiles.py": ["tests/test_rules_mahimahi.py", "tests/test_rules_trace_loss.py"],
    "routing/medium/signal_trace.py": ["tests/test_signal_trace.py", "tests/test_rules_signal_trace.py"],
    # the user-space TCP's connection and SNACK (issue 30, item 3); tests/test_sockets.py (real-time meshes)
    # and tests/test_fuzz_node.py (whole nodes, 1 to 3 s a test) are left out
    "tcp_user/snack.py": ["tests/test_snack.py", "tests/test_rules_tcp_snack.py"],
    "tcp_user/connection.py": ["tests/test_tcp_harness.py", "tests/test_tcp_receiver.py", "tests/test_tcp_rtt.py",
                               "tests/test_tcp_delayed_ack.py", "tests/test_tcp_flow.py", "tests/test_tcp_parts.py",
                               "tests/test_tcp_rules.py",
                               "tests/test_tcp_reno.py", "tests/test_tcp_sack.py", "tests/test_tcp_transfer.py",
                               "tests/test_tcp_cwnd_limited.py", "tests/test_congestion_mutants.py",
                               "tests/test_rules_congestion.py", "tests/test_rules_sack.py", "tests/test_snack.py",
                               "tests/test_bulk.py", "tests/test_rules_connection.py"],
    "tcp_user/segment.py": ["tests/test_rules_tcp_segment_state.py", "tests/test_tcp_parts.py",
                            "tests/test_tcp_receiver.py", "tests/test_tcp_transfer.py", "tests/test_rules_connection.py"],
    "tcp_user/state.py": ["tests/test_rules_tcp_segment_state.py", "tests/test_tcp_parts.py",
                          "tests/test_tcp_transfer.py", "tests/test_rules_connection.py"],
}

#: tests left out of a module's run, and why: a memory measurement that takes half a minute under
#: mutmut's tracing, run for every mutant of the functions it reaches (the flow bounds it measures are
#: pinned by test_forged_flows_are_bounded_refused_and_counted and tests/test_aspan_agent_mutants.py)
DESELECT: dict[str, list[str]] = {
    # whole runs on the sim (a 6,000-segment flow twice; two Mahimahi-limited flows), seconds each: the rules
    # they rest on are pinned without a run in tests/test_rules_signal_trace.py and the queue tests
    "routing/medium/signal_trace.py": ["tests/test_signal_trace.py::test_minstrel_follows_the_recorded_signal_down",
                                "tests/test_signal_trace.py::test_the_trace_plays_from_the_flows_start_on_the_sim"
                                "_and_the_local_medium_process"],
    "routing/links/linkem.py": ["tests/test_mahimahi.py::test_on_the_sim_the_goodput_follows_the_traces_rate"],
    "routing/links/mahimahi.py": ["tests/test_mahimahi.py::test_on_the_sim_the_goodput_follows_the_traces_rate"],
    # whole runs on the sim (3 variants of 16,000 segments, a diamond, a grid) and the local backend, 20 s to
    # 3 min each; the learner's rules are pinned by the synthetic-path tests of the same file
    "aspan/adaptive.py": [f"tests/test_adaptive_qos.py::{t}" for t in (
        "test_on_the_lossy_chain_it_turns_the_papers_dupack_rule_off_and_the_once_rule_on",
        "test_every_flow_on_a_graph_has_its_own_learner",
        "test_on_the_local_backend_the_nodes_sender_learns_over_udp")],
    "aspan/agent.py": ["tests/test_bounded_state.py::test_memory_of_a_hostile_flood_stays_below_the_documented_bound"],
    "aspan/snoop_classic.py": ["tests/test_bounded_state.py::test_memory_of_a_hostile_flood_stays_below_the_documented_bound"],
    # statistical runs of a million packets (1 to 3 s each, and a CPU limit per mutant that grows with them
    # for the mutants of GilbertElliott.advance that loop forever); tests/test_rules_loss.py pins the same
    # rules exactly, against the model's own random streams
    # whole meshes on a backend, 1 to 15 s each (the router's rules are pinned one by one in
    # tests/test_rules_linkstate.py and the rest of tests/test_linkstate.py)
    "routing/topology/linkstate.py": [f"tests/test_linkstate.py::{t}" for t in (
        "test_the_local_backend_reroutes_with_the_mac_on",
        "test_no_walk_of_next_hops_repeats_a_node_when_costs_move_within_the_margin",
        "test_the_diamond_reroutes_around_a_failed_link_within_dead_s_and_static_routes_wait_for_it",
        "test_crossing_flows_on_a_grid_reroute_round_a_dead_centre_without_loops",
        "test_the_time_axis_marks_the_failure_the_reroute_and_the_recovery",
        "test_two_equally_lossy_paths_on_the_sim_do_not_flap_the_route")],
    # runs that record a mesh (a 2.4 s fixture, again for every mutant) to test the trace's extraction
    # (experiments/trace.py), not the replay this module does
    "routing/links/trace_loss.py": [f"tests/test_trace.py::{t}" for t in (
        "test_every_etx_event_carries_the_probe_counters",
        "test_the_trace_has_every_directed_link_and_what_it_delivered",
        "test_closed_loop_on_the_sim_the_replayed_links_lose_what_the_recorded_ones_did",
        "test_trace_extract_command")],
    # whole runs (experiments on the sim, local and netns backends), thousands of frames (saturated links
    # and chains, the grey-zone sweep, Minstrel climbing and settling over seeds and distances): 2 to 16 s
    # each under mutmut's tracing, 86 s for the module's selection with them, paid again by every mutant
    # that survives in the functions every test reaches.  The rules they rest on are pinned one by one, in
    # virtual time, by the rest of these files and tests/test_rules_medium.py
    "routing/medium/dcf.py": [f"tests/test_medium_rates.py::{t}" for t in (
        "test_minstrel_at_ht_rates_in_the_netns_medium_daemon",
        "test_minstrel_at_ht_rates_in_the_local_medium_process",
        "test_default_medium_runs_are_byte_identical_to_before_rates",
        "test_minstrel_settles_on_the_rate_a_fixed_rate_sweep_finds_best",
        "test_under_sinr_minstrel_settles_on_the_rate_a_fixed_rate_sweep_finds_best",
        "test_minstrel_on_the_sim_on_graphs",
        "test_a_single_link_at_the_top_rate_runs_at_the_standards_airtime",
        "test_with_reception_by_range_minstrel_climbs_to_the_top_rate")] + [
        f"tests/test_medium_sinr.py::{t}" for t in (
        "test_delivery_falls_with_distance_and_faster_at_a_higher_rate",
        "test_the_same_seed_gives_the_same_run_and_another_seed_another",
        "test_a_chain_runs_on_the_sim_with_reception_sinr",
        "test_reception_sinr_runs_on_graphs",
        "test_validate_and_run_refuse_the_same_sinr_lines")] + [
        "tests/test_medium.py::test_saturated_chain_throughput_falls_with_hops_as_li_et_al",
        "tests/test_medium_rts.py::test_rts_cts_removes_most_hidden_terminal_collisions"],
    "routing/links/loss.py": ["tests/test_loss.py::test_ge_stationary_fractions_and_bursts",
                        "tests/test_loss.py::test_ge_bursts_contiguous_in_time"],
}

#: the packages copied into mutmut's tree (everything a selected test may import)
PACKAGES = ["aspan", "etx", "tcp_user", "routing", "experiments", "plots", "deploy", "bench"]
#: the top-level modules copied with them (pyproject.toml py-modules)
NEUTRAL = ["fieldspec.py", "tracefiles.py"]

#: mutant name -> (the mutated line as ``mutmut show`` prints it after "+", why no test can kill it)
#: Names are mutmut's (module, class, function, number within the function): editing a function can
#: renumber its mutants, which the check of the mutated line then reports as stale.
_NO_SEQ_0 = ("a window treats only sequence number 0 differently, and no datagram reaches it with 0: "
             "MeshAuth starts at first_seq >= 1, and a forged one fails its tag first")
_LINK_CACHE = "MeshAuth._out caches link_id(address, next_hop): computing it again gives the same bytes"
_UNWRAP_REF = ("unwrapping against the highest data instead of the last ACK differs only for a number more "
               "than 2**30 bytes behind the ACK; the two are at most one window (<= 2**30, RFC 7323 sec. 2.3) apart")
_MINUS_HALF = "(x - HALF) % 2**32 == (x + HALF) % 2**32: HALF is half the modulus"
_FALSY = "update_effort reads `cached` as a truth value: None is False"
_RTX_RESET = ("expected_dupacks is read only when rtx_seq equals the dupack's ACK, and a new ACK resets rtx_seq "
              "with it; rtx_seq is set only under \"once\", so under \"every\" the test is always true")
_FAST_PATH = "the known-flow fast path: _admit finds the same state, sets last_active, and sweeps only for new flows"
_SAME_FLOW = ("on_ack sees only flows on_data made, and on_data sets high_end before it returns: "
              "ref is never None there")
_TRUTH = "read only as a truth value (`if cc.fast_rtx_pending`, `if self.in_recovery`): None is False"
_LT_IN_RECOVERY = ("lt_extra is not read in recovery (connection._output_window), and recovery ends through "
                   "on_new_ack or on_rto, which set it to 0")
_HIGH_RXT_DEAD = "high_rxt is read only in recovery, and entering recovery sets it to SND.UNA first"
_NEVER_ZERO = ("start is -1 (none found) or a data octet's offset, >= 1 (offset 0 is the SYN): "
               "every test of it against 0 or 1 gives the same answer")
_TINY_WINDOW = ("room 0 or 1 with 2 * room >= the largest window the peer offered needs a peer window of 2 "
                "bytes at most, and recovery needs DupThresh + 1 segments in flight within it")
_SAME_VALUE = "at equality it stores or picks the value it already has"
_CC = "tcp_user.congestion.x"
_SYN_ACKED = ("overwritten before it is read: the handshake's acknowledgement of the SYN runs on_new_ack, "
              "which resets dupacks, lt_extra, _last_rto_una and (ack >= RecoveryPoint 0) rto_recovery")
_FIRST_PROBE = ("read only once a probe is heard (_highest >= 0), and the first probe after a reset "
                "sets it")
_TABLE_LOOKUP = "the fast path of EtxTable.quality: link() returns the same estimator"
_ETX = "etx.estimator.x"
_STEP = "routing.forwarding.step.x"
_RATES = "routing.medium.rates."
_KBPS_SET = "a DSSS/HR-DSSS rate is 1000, 2000, 5500 or 11000 kbit/s (dsss_rate refuses others): no rate lies between"
_MED = "routing.medium.dcf.x"
_FREEZE_GUARD = ("_freeze's one caller, _busy, calls it only for a station that is counting (count_from set) "
                 "and whose attempt is later than now: the guard never returns")
_CONTEND_GUARD = ("_contend returns first for a station that is busy, in its own exchange, without a backoff or "
                  "already counting: calling it in more cases changes nothing")
_GROUP_DONE = ("a group-addressed frame's exchange: _done reads success only with acked (False here) or with "
               "uses_rts(..., acked=False) (False): the same as True")
_CONTEND_CALLERS = ("_contend's callers (_next_frame after _done or a send outside an exchange, with a backoff just "
                    "drawn; _idle when one is drawn, outside an exchange and not counting) never call it in the "
                    "station's own exchange, without a backoff or while it counts: only busy decides")
_RESPONDING = ("not reached while a Topology's senses include its hears (its invariant): a station answers a "
               "frame it sensed until SIFS before, and counts only from DIFS (> SIFS) after a busy medium, so its "
               "attempt never falls when its own CTS or Ack starts")
_RTS_KIND = ("an RTS's kind is read only as not data, not ack and not cts (_radiate: responders; _mode: the "
             "control mode): any other label is the same")
_BANDS = "a band is 2.4 or 5 GHz (the rate tables' only values): no band lies between 3 and 4 GHz"
_EM = "routing.medium.error_model."
_IMPORT_TIME = ("not killable by mutmut: _ofdm runs only while the module is imported (building OFDM_MODES and "
                "HT_MODES), before mutmut switches a mutant on; applied by hand, each fails "
                "tests/test_rules_error_model.py::test_the_mode_tables")
_ML = "routing.medium.rate_control.minstrel.xǁMinstrelǁ"
_LOSS = "routing.links.loss."
_LS = "routing.topology.linkstate."
_VIEW = "the reversed graph is only read: a view and a copy give the same distances"
_NODE_ADDRS = ("a route table built here holds node addresses only (its neighbours' and the overrides', "
               "checked): every next hop is some node's")
_AA = "aspan.ackall.xǁAckAllSnoopAgentǁ"
_UNUSED_ARG = "the classic agent's method does not read that argument (_generate: the flow; _may_rxmit: only the entry)"
_CLASSIC_ON_ACK = "ClassicSnoopAgent.on_ack reads neither the window, the SNACK entries nor the packet"
_SC = "aspan.snoop_classic.xǁClassicSnoopAgentǁ"
_SC_NO_NODE = "SnoopAgent.__init__ does not read the node's name (the agent keeps none)"
_SC_THEN_RETURNS = "every path of the branch before (exp_dupacks == 0) returns: this test sees only nonzero values"
_SC_ARMED = "_rxmit returned a packet, and it arms the timer before it does: st.timer is set here"
_SC_JUST_ADDED = "the segment was just added to the cache, so the cache has a lowest segment"
_SC_NONE_AT_ACK = ("no cached segment ends at or below the last ACK (a new ACK frees them and on_data caches none), "
                   "so a dupack's number never equals the lowest segment's end")
_SN = "aspan.snack.xǁSnackSnoopAgentǁ"
_SL = "aspan.slack.xǁSlackSnoopAgentǁ"
_CALL = "super().on_ack(flow, ack, now, "
_SACK = "tcp_user.sack."
_ADDS_ZERO = "at equality the branch adds min(x, y) - y = 0 octets"
_CLAMP = "clamping x == 0 to 0.0 or x == 1 to 1.0 gives x itself"
_TWO_WAY = ("the kept next hop is in mine, a two-way link, and d is reachable (else the function returned): "
            "the next hop reaches d through this node at worst, so its distance is known")
_DONE = ("the done set and the strict test only spare work: a node popped again, or a path of equal cost pushed "
         "again, finds no shorter distance and leaves dist as it was")
_IN_GRAPH = ("every node Dijkstra reaches is a key of the graph: a link counts only when both ends advertise it, "
             "so its far end has an LSA")
_SELF_DIST = "dist_from[v] is Dijkstra from v, which gives v itself 0.0: the same as the shortcut"
_REACHED = ("the check runs only when some neighbour has a finite path to d (else the function returned first), "
            "so this node's distance to d is known")
_AFTER_TIE = ("it runs after the tie test: best's cost is the least, so unless best is old it is strictly lower, "
              "and both forms agree")
_JOIN = ("the join's bound only shows when a dump hangs for more than 6 s, and a dump is a subprocess with "
         "timeout=5: the thread ends sooner (a test of it would wait 6 s in real time)")
_AD = "aspan.adaptive."
_AD_BACKOFF = ("every arm but the incumbent has a backoff from _start_holding, _switch_to or _forget_others before it is "
               "re-probed, so the default of get is never read")
_AD_PROBE = ("the new incumbent's entry is never read: `due` leaves the incumbent out, and when it is replaced "
             "_switch_to writes the entry anew; the challenger always has one (it ran because it was due)")
_TCP = "tcp_user.connection.xǁTcpConnectionǁ"
_T_TRUTH = "read only as a truth value: None is False"
_T_SAME = "at equality it stores or picks the value it already has"
_T_WL = ("the first window taken is the SYN+ACK's (SEG.SEQ 0), which passes with SND.WL1 below 0 whatever SND.WL2 "
         "is; the passive and simultaneous opens set SND.WL1 and SND.WL2 to 0 first")
_T_WL2 = ("an acceptable ACK of our SYN has SEG.ACK 1 (ISS < SEG.ACK =< SND.NXT): SND.WL2 0 or 1 is =< it, and "
          "every later segment has SEG.SEQ >= 1 > SND.WL1")
_T_IRS = "read only once the peer's SYN is in (_have_irs), which sets it first"
_T_EDGE = ("at RCV.NXT 1 an edge of 0 or 1 is not above RCV.NXT: the first window is the free space either way, and "
           "the first ACK sets the edge")
_T_TIMER = ("the retransmission timer stops when everything is acknowledged (RFC 6298 5.2) and on leaving the "
            "sending states, so while it runs there is data outstanding in a sending state: _on_rto sets it again "
            "or aborts (CLOSED clears it), never taking the early return")
_T_SYN_ACKED = "overwritten: the SYN's acknowledgement runs _on_new_ack right after, which sets it to 0"
_T_NO_SEG = ("reached only for a segment without data, SYN or FIN (SEG.LEN 0): the caller has nothing more to do "
             "with it either way")
_T_FIN_ZERO = "for nxt >= the data's end _seg_len gives 0, what the else gives"
_T_WRAP = ("the window is at most the free buffer, <= rcv_buffer <= 2**32 - 1 (TcpConfig), or one advertised "
           "before: it never exceeds MASK")
_AD_EXACT = ("differs only when the difference equals Z standard errors exactly, in floating point: two measured "
             "goodputs never do, and with no noise (se 0) the margin test already needs a positive difference")
_BULK = "tcp_user.bulk."
_ASCII_ALIAS = "'ASCII' names the same codec as 'ascii'"
_DIGITS_ONLY = ("the file holds digits and newlines only, the same bytes in any ASCII-compatible encoding (the "
                "locale's is UTF-8 here)")
_MM_FIRST_IDLE = ("read only when the queue is busy; the first packet finds it idle (_at starts at -inf) and sets "
                  "both before any packet can read them")
EQUIVALENT: dict[str, tuple[str, str]] = {
    # aspan/schemes.py: no agent reads the node's name
    "aspan.schemes.x__aspan__mutmut_1": ("return SnoopAgent(None, config, emit)", _SC_NO_NODE),
    "aspan.schemes.x_make_agent__mutmut_9": ("return entry.make(None, config, emit, scheme)", _SC_NO_NODE),
    # routing/overlay/udp_link.py, routing/links/linkem.py, routing/medium/signal_trace.py, routing/links/mahimahi.py
    "routing.links.linkem.x_count_release__mutmut_22": ('if late >= stats["late_max_us"]:', _SAME_VALUE),
    "routing.overlay.udp_link.xǁEgressLinksǁhold__mutmut_31": ('if len(self._held) >= self.stats["held_max"]:', _SAME_VALUE),
    "routing.links.linkem.xǁLinkQueueǁadmit__mutmut_10": ("start = now if now >= self.busy_until else self.busy_until",
                                                   _SAME_VALUE),
    "routing.links.linkem.xǁLinkQueueǁadmit__mutmut_13": (
        "if (p.rate_bps != math.inf) or True else start", "at an infinite rate size * 8 / rate is 0.0: start + 0.0 "
                                                         "is start"),
    "routing.medium.signal_trace.x_build__mutmut_16": ('bool(settings.get("loop", None))', "bool(None) is bool(False)"),
    "routing.medium.signal_trace.x_build__mutmut_18": ('bool(settings.get("loop", ))', "bool(None) is bool(False)"),
    "routing.links.mahimahi.x_opportunities__mutmut_33": (
        "while len(out) + 1 < total + 1e-9:", "differs only when the running total is exactly a whole number less "
                                              "1e-9, which a sum of per-millisecond rates never is"),
    "tracefiles.x_read_mahimahi__mutmut_11": ('encoding="ASCII"', _ASCII_ALIAS),
    "tracefiles.x_write_mahimahi__mutmut_11": ('encoding="ASCII"', _ASCII_ALIAS),
    "tracefiles.x_write_mahimahi__mutmut_4": ('encoding=None', _DIGITS_ONLY),
    "tracefiles.x_write_mahimahi__mutmut_6": ('open("w", )', _DIGITS_ONLY),
    "routing.links.mahimahi.xǁOpportunityQueueǁ__init____mutmut_7": ("self._k = None", _MM_FIRST_IDLE),
    "routing.links.mahimahi.xǁOpportunityQueueǁ__init____mutmut_8": ("self._k = 1", _MM_FIRST_IDLE),
    "routing.links.mahimahi.xǁOpportunityQueueǁ__init____mutmut_11": ("self._left = None", _MM_FIRST_IDLE),
    "routing.links.mahimahi.xǁOpportunityQueueǁ__init____mutmut_12": ("self._left = 1", _MM_FIRST_IDLE),
    # tcp_user/bulk.py
    _BULK + "xǁBulkSenderǁon_timer__mutmut_22": (
        "self.conn.close(None)", "close() is called in SYN_SENT, right after connect(): it only queues the FIN "
                                 "(RFC 9293 sec. 3.10.4), with no event and no time read"),
    _BULK + "xǁBulkSenderǁon_timer__mutmut_30": (
        "self._check_done(None)", "the sender is done only when an ACK acknowledges its FIN, which on_segment "
                                  "handles; a timer never completes it, so this call never emits"),
    _BULK + "xǁBulkSenderǁsegments_to_send__mutmut_2": (
        "return self.conn.segments_to_send(now) if (self.started) or True else []",
        "before the start the connection is not opened and has nothing to send: both give []"),
    # tcp_user/connection.py
    _TCP + "__init____mutmut_18": ("self._probe_end = 1", "top = max(SND.MAX, probe end) is read from ESTABLISHED "
                                   "on, when SND.MAX >= 1 (the SYN): a probe end of 1 never raises it"),
    _TCP + "__init____mutmut_24": ("self._fin_queued = None", _T_TRUTH),
    _TCP + "__init____mutmut_29": ("self._max_snd_wnd = 1", "the SWS test is reached only with usable > 0, after a "
                                   "window > 0 was taken, which set the maximum to it (>= 1) either way"),
    _TCP + "__init____mutmut_32": ("self._snd_wl1 = -2", _T_WL),
    _TCP + "__init____mutmut_33": ("self._snd_wl2 = None", _T_WL),
    _TCP + "__init____mutmut_34": ("self._snd_wl2 = +1", _T_WL),
    _TCP + "__init____mutmut_35": ("self._snd_wl2 = -2", _T_WL),
    _TCP + "__init____mutmut_42": ("self._force_one = None", _T_TRUTH),
    _TCP + "__init____mutmut_44": ("self._probe_pending = None", _T_TRUTH),
    _TCP + "__init____mutmut_46": ("self._force_small = None", _T_TRUTH),
    _TCP + "__init____mutmut_56": ("self._rtt_time = None", "written with _rtt_seq whenever a segment is timed, "
                                   "and read only while _rtt_seq is set"),
    _TCP + "__init____mutmut_57": ("self._rtt_time = 1.0", "written with _rtt_seq whenever a segment is timed, "
                                   "and read only while _rtt_seq is set"),
    _TCP + "__init____mutmut_58": ("self._syn_retransmitted = None", _T_TRUTH),
    _TCP + "__init____mutmut_68": ("self._delack_segments = None", "every connection sends its SYN or SYN+ACK before "
                                   "any data can arrive, and _ack_fields sets the count to 0 for it"),
    _TCP + "__init____mutmut_69": ("self._delack_segments = 1", "every connection sends its SYN or SYN+ACK before "
                                   "any data can arrive, and _ack_fields sets the count to 0 for it"),
    _TCP + "__init____mutmut_70": ("self._have_irs = None", _T_TRUTH),
    _TCP + "__init____mutmut_72": ("self._irs = None", _T_IRS),
    _TCP + "__init____mutmut_73": ("self._irs = 1", _T_IRS),
    _TCP + "__init____mutmut_74": ("self._rcv_nxt = None", _T_IRS),
    _TCP + "__init____mutmut_75": ("self._rcv_nxt = 1", _T_IRS),
    _TCP + "__init____mutmut_81": ("self._rcv_adv_edge = 1", _T_EDGE),
    _TCP + "_on_syn_sent__mutmut_31": ("self._rcv_adv_edge = 1", _T_EDGE),
    _TCP + "_on_syn_sent__mutmut_2": ("ack_ok = None", _T_TRUTH),
    _TCP + "_on_listen__mutmut_14": ("self._snd_wl1, self._snd_wl2 = 0, 1", _T_WL2),
    _TCP + "_on_syn_sent__mutmut_43": ("self._snd_wl1, self._snd_wl2 = 0, 1", _T_WL2),
    _TCP + "_on_syn_sent__mutmut_39": ("self._process_ack(seg, 1, now)", "SND.WL1 -1 is below 0 and 1 alike, and every "
                                       "later acceptable segment has SEG.SEQ >= 1, which SND.WL1 0 or 1 lets through "
                                       "(SND.WL2 =< SEG.ACK always holds)"),
    _TCP + "next_timer__mutmut_6": ("t <= best", _T_SAME),
    _TCP + "send__mutmut_5": ("raise RuntimeError(None)", "unreachable: the states outside _SEND_ALLOWED (FIN_WAIT_1 "
                              "and after, LAST_ACK) come only after close() queued our FIN, which send() refuses first"),
    _TCP + "close__mutmut_2": ("if self._fin_queued and st == State.CLOSED:", "with the FIN queued the state is "
                               "SYN_SENT or SYN_RCVD (the flag is set again) or FIN_WAIT_1 and after (no CLOSE "
                               "transition), and in CLOSED no branch applies: the rest of close() does nothing"),
    _TCP + "read__mutmut_11": ("if n < 0:", "reading 0 octets changes neither buffer nor window: the update test gives "
                               "what the last read's did, which sent the update or left it to a waiting delayed ACK"),
    _TCP + "read__mutmut_35": ("if self._rcv_nxt + wnd >= self._rcv_adv_edge:", _T_SAME),
    _TCP + "_ack_fields__mutmut_13": ("if rcv_nxt + wnd >= self._rcv_adv_edge:", _T_SAME),
    _TCP + "_ack_fields__mutmut_18": ("if self._sack or self._reasm.blocks:", "Reassembly(False) (no SACK) keeps no "
                                      "recency list: sack_blocks gives no block, as the guard does"),
    _TCP + "_process_ack__mutmut_12": ("if self._snd_max >= self._probe_end", _T_SAME),
    _TCP + "_process_ack__mutmut_19": ("if self._snd_wl1 <= seq or", "SND.WL2 is an ACK that passed SEG.ACK >= SND.UNA, "
                                       "and SND.UNA only grows: SND.WL2 =< SND.UNA =< SEG.ACK whenever the test runs"),
    _TCP + "_process_ack__mutmut_26": ("if seg.window >= self._max_snd_wnd:", _T_SAME),
    _TCP + "_process_ack__mutmut_38": ("if (seg.sack) or True else 0", "on_sack_blocks of no block adds nothing and "
                                       "returns 0 (Reno always 0; SACK's Update() loops over no block)"),
    _TCP + "_process_ack__mutmut_77": ("return False", _T_NO_SEG),
    _TCP + "_process_ack__mutmut_84": ("return False", _T_NO_SEG),
    _TCP + "_on_new_ack__mutmut_14": ("acked = ack if ack <= data_end else data_end", _T_SAME),
    _TCP + "_on_new_ack__mutmut_19": ("newly = acked - (una if una >= 1 else 1)", "at SND.UNA 1 both subtract 1"),
    _TCP + "_on_new_ack__mutmut_22": ("if newly >= 0:", "it adds 0 octets"),
    _TCP + "_on_new_ack__mutmut_26": ("newly = None", "congestion control reads newly only as a truth value when it "
                                      "is 0 (CongestionControl.on_new_ack: `elif newly and ...`)"),
    _TCP + "_on_new_ack__mutmut_29": ("if ack >= self._snd_max:", _T_SAME),
    _TCP + "_on_new_ack__mutmut_31": ("if self._snd_nxt <= ack:", _T_SAME),
    _TCP + "_on_new_ack__mutmut_35": ("if drop >= 0:", "it deletes 0 octets"),
    _TCP + "_on_new_ack__mutmut_36": ("if drop > 1:", "a one-octet ACK leaves its octet in the buffer until the next "
                                      "ACK trims it; payloads are taken at offsets from _sndbuf_base, which stays with it"),
    _TCP + "_process_data__mutmut_5": ("if seq <= rcv_nxt:", "at seq == RCV.NXT it trims 0 octets"),
    _TCP + "_process_data__mutmut_16": ("data = data[: max(1, right - seq)]", "an acceptable segment with data starts "
                                        "below RCV.NXT + RCV.WND, so right - seq >= 1 after the trim (at a zero window "
                                        "only a bare FIN is acceptable)"),
    _TCP + "_process_data__mutmut_18": ("fin = None", _T_TRUTH),
    _TCP + "_process_data__mutmut_69": ("self._rcv_nxt = None", "the FIN branch's store is overwritten by the one "
                                        "after it, and _fire reads nothing of it"),
    _TCP + "_process_data__mutmut_70": ('self._rcv_fin = ""', "after the FIN the state is CLOSE_WAIT, CLOSING or "
                                        "TIME_WAIT, outside RECV_STATES, where _process_data is not called again"),
    _TCP + "_process_data__mutmut_75": ("in_order = None", _T_TRUTH),
    _TCP + "_rcv_wnd__mutmut_9": ("w = free if free >= held else held", _T_SAME),
    _TCP + "_rcv_wnd__mutmut_11": ("return w if (w < MASK) or True else MASK", _T_WRAP),
    _TCP + "_rcv_wnd__mutmut_12": ("return w if w <= MASK else MASK", _T_WRAP),
    _TCP + "on_timer__mutmut_4": ('self._tw_deadline = ""', "TIME_WAIT_EXPIRED leads to CLOSED, where _fire clears it"),
    _TCP + "on_timer__mutmut_15": ('self._rto_deadline = ""', _T_TIMER),
    _TCP + "_on_rto__mutmut_28": ("if st not in SEND_STATES and self._snd_una >= self._snd_max:", _T_TIMER),
    _TCP + "_on_rto__mutmut_30": ("if st not in SEND_STATES or self._snd_una > self._snd_max:", _T_TIMER),
    _TCP + "_rtt_sample__mutmut_3": ("if self.srtt is None and self.rttvar is None:", "SRTT and RTTVAR are None "
                                     "together until the first sample sets both"),
    _TCP + "segments_to_send__mutmut_18": ("out.append(self._build(0, None, now))", "for the SYN (start 0) _build "
                                           "reads n only as a truth value"),
    _TCP + "segments_to_send__mutmut_55": ("min(self._persist_backoff, 31)", "RTO x 2**30 is above max_rto unless "
                                           "max_rto / min_rto > 2**30 (60 s / 2**30 = 56 ns): capped either way"),
    _TCP + "_output_snack__mutmut_2": ("if self._snd_una <= s <= self._snd_max:", "SnackSender takes only entries "
                                       "below SND.MAX, and SND.MAX never falls"),
    _TCP + "_output_window__mutmut_3": ("cc.fast_rtx_pending = None", _T_TRUTH),
    _TCP + "_output_window__mutmut_16": ("self._probe_pending = None", _T_TRUTH),
    _TCP + "_output_window__mutmut_48": ("self._force_one = None", _T_TRUTH),
    _TCP + "_output_window__mutmut_95": ("self._force_small = None", _T_TRUTH),
    _TCP + "_output_window__mutmut_97": ("self._force_small = None", _T_TRUTH),
    _TCP + "_output_window__mutmut_32": ("if (not cc.in_recovery) or True else self.cwnd", "lt_extra is 0 in "
                                         "recovery: entering it (Reno and SACK) sets 0, and only a dupack outside "
                                         "recovery raises it"),
    _TCP + "_output_window__mutmut_42": ("if sb is not None and sb.blocks and nxt <= self._snd_max:", "no SACKed "
                                         "block reaches past SND.MAX (Update() drops such blocks): skip(SND.MAX) is SND.MAX"),
    _TCP + "_output_window__mutmut_52": ("n = self._seg_len(nxt) if (nxt < data_end) or True else 0", _T_FIN_ZERO),
    _TCP + "_output_window__mutmut_54": ("n = self._seg_len(nxt) if nxt <= data_end else 0", _T_FIN_ZERO),
    _TCP + "_output_window__mutmut_78": ("return", "the reset after the loop matters only when _force_small is set, by "
                                         "a persist expiry with the window open and nothing in flight (the persist "
                                         "timer runs only while SND.UNA = SND.MAX): the first pass then sends, which "
                                         "resets it"),
    _TCP + "_output_window__mutmut_87": ("return", "taken only when _force_small is False (else the partial segment "
                                         "goes): the reset after the loop does nothing"),
    _TCP + "_seg_len__mutmut_3": ("if n < 0:", "at n = 0 the rest returns 0 as well"),
    _TCP + "_seg_len__mutmut_6": ("if n >= self._mss:", _T_SAME),
    _TCP + "_seg_len__mutmut_12": ("if sb is not None and sb.blocks and start <= self._snd_max:", "no SACKed block "
                                   "starts at or past SND.MAX: next_start(SND.MAX) is None"),
    _TCP + "_seg_len__mutmut_18": ("if ns is not None and ns - start <= n:", _T_SAME),
    _TCP + "_build__mutmut_95": ("if end >= self._snd_max:", _T_SAME),
    _TCP + "_build__mutmut_98": ("if start <= self._snd_nxt <= end:", _T_SAME),
    _TCP + "_zero_window_probe__mutmut_5": ("if nxt + 2 > self._probe_end:", "it assigns also when the probe end is "
                                            "nxt + 1 already: the same value"),
    _TCP + "_zero_window_probe__mutmut_6": ("if nxt + 1 >= self._probe_end:", _T_SAME),
    _TCP + "_reply_rst__mutmut_13": ("self._pending.append(Segment(seg.ack, 0, RST, ))", "window 0 is Segment's default"),
    _TCP + "_reply_rst__mutmut_24": ("RST | ACK, ))", "window 0 is Segment's default"),
    _TCP + "_established__mutmut_12": ("self._rto_consecutive = None", _T_SYN_ACKED),
    _TCP + "_established__mutmut_13": ("self._rto_consecutive = 1", _T_SYN_ACKED),
    _TCP + "_abort__mutmut_1": ('self.stats["aborted"] = 1', "a connection aborts once: ABORT leads to CLOSED, where "
                                "no timer runs"),
    # aspan/adaptive.py
    _AD + "xǁQosLearnerǁ_schedule__mutmut_17": ("self._backoff.get(arm, None) * 2", _AD_BACKOFF),
    _AD + "xǁQosLearnerǁ_schedule__mutmut_19": ("self._backoff.get(arm, ) * 2", _AD_BACKOFF),
    _AD + "xǁQosLearnerǁ_schedule__mutmut_20": ("self._backoff.get(arm, 2) * 2", _AD_BACKOFF),
    _AD + "xǁQosLearnerǁ_switch_to__mutmut_10": ("self._next_probe.pop(None, None)", _AD_PROBE),
    _AD + "xǁQosLearnerǁ_switch_to__mutmut_12": ("self._next_probe.pop(arm, )", _AD_PROBE),
    _AD + "xǁQosLearnersǁget__mutmut_6": ("learners.popitem(last=None)", "None is false: the same first-in item"),
    _AD + "xǁQosLearnerǁon_ack__mutmut_14": ("if 0 <= delta < HALF:", "an ACK that advances nothing adds 0 bytes and "
                                                                      "keeps the same highest ACK"),
    _AD + "xǁQosLearnerǁclearly_better__mutmut_26": ("ma - mb >= Z * se", _AD_EXACT),
    _AD + "xǁQosLearnerǁpath_changed__mutmut_31": ("abs(mr - mb) >= Z * se", _AD_EXACT),
    # routing/medium/error_model.py
    _EM + "x__ofdm__mutmut_1": ("Mode(None, rate, modulation, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_2": ("Mode(name, None, modulation, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_3": ("Mode(name, rate, None, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_4": ("Mode(name, rate, modulation, None)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_5": ("Mode(rate, modulation, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_6": ("Mode(name, modulation, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_7": ("Mode(name, rate, code)", _IMPORT_TIME),
    _EM + "x__ofdm__mutmut_8": ("Mode(name, rate, modulation, )", _IMPORT_TIME),
    _EM + "x_qam_ber__mutmut_4": (
        "((2 * (m - 1)) / 3)", "2 (M - 1) is a multiple of 3 for M = 16 and 64, the only QAM orders: / and // agree"),
    _EM + "x__ofdm_success__mutmut_4": (
        "if ber == 1.0:", "an uncoded BER is at most 0.5, and at BER 0 the formula gives (1 - 0) ** n = 1, what the "
        "shortcut returns"),
    # routing/links/loss.py
    _LOSS + "xǁLinkDownǁ__init____mutmut_11": (
        "math.isnan(start) and math.isnan(end)", "`not start < end` refuses any NaN end too: NaN compares false"),
    _LOSS + "xǁRampǁrate__mutmut_1": (
        "if now < self.start:", "at now == start the linear formula gives rate_from + 0: what the branch returns"),
    _LOSS + "xǁBitErrorǁ__init____mutmut_18": (
        "else +math.inf", "_log1m is read only for ber < 1 (packet_loss returns first at ber >= 1)"),
    _LOSS + "xǁBitErrorǁdrop__mutmut_1": (
        "return self.drop_sized(None, self.default_size)", "a bit error does not depend on the time"),
    _LOSS + "xǁGilbertElliottǁ__init____mutmut_46": (
        "self._switch_at = None", "set by the first call to advance before anything reads it"),
    _LOSS + "xǁPacketGilbertElliottǁdrop__mutmut_7": (
        "self._good = None", "_good is read only as a truth value (and `state` says bad for it): None is False"),
    _LOSS + "x_node_rng__mutmut_22": ('.encode("UTF-8")', "codec names are case-insensitive: the same encoder"),
    # routing/topology/linkstate.py
    _LS + "xǁLinkStateRouterǁoriginate__mutmut_34": (
        "self._store(lsa, None)", "the time a node's own LSA was stored is never read: expire skips the own "
        "origin and _refused answers lsa_own before it looks at the held copy"),
    _LS + "x__dijkstra__mutmut_10": ("done.add(None)", _DONE),
    _LS + "x__dijkstra__mutmut_17": ("if dv <= dist.get(v, math.inf):", _DONE),
    _LS + "x__dijkstra__mutmut_12": ("g.get(u, None).items()", _IN_GRAPH),
    _LS + "x__dijkstra__mutmut_14": ("g.get(u, ).items()", _IN_GRAPH),
    _LS + "xǁLinkStateRouterǁ_choose__mutmut_2": ("(0.0 if (v == d) and False else", _SELF_DIST),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_2": ("dv = 0.0 if (v == d) and False else", _SELF_DIST),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_4": (
        "dv = 1.0 if v == d else", "differs only when this node's distance to d is 1, its direct link at the "
        "least cost: then d itself is the best next hop and the old one, kept or not"),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_12": ("return dv < my_dist.get(d, None)", _REACHED),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_14": ("return dv < my_dist.get(d, )", _REACHED),
    _LS + "x__dijkstra__mutmut_2": (
        "dist = {src: 1.0}", "the search starts from the heap's (0.0, src), and dist[src] is read only for an edge "
        "back to src, whose path (every link costs >= 1) is never below 1: all other distances are the same"),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_7": ("dist_from[v].get(d, None)", _TWO_WAY),
    _LS + "xǁLinkStateRouterǁ_feasible__mutmut_9": ("dist_from[v].get(d, )", _TWO_WAY),
    _LS + "xǁLinkStateRouterǁ_choose__mutmut_17": (
        "self._better.pop(None, None)", "when no neighbour reaches d the route is removed, and the next "
        "computation that finds one has no old next hop: that branch forgets the candidate"),
    _LS + "xǁLinkStateRouterǁ_choose__mutmut_45": (
        "math.isclose(best_cost, old_cost, )", "rel_tol=1e-9 is math.isclose's default"),
    _LS + "xǁLinkStateRouterǁ_choose__mutmut_50": ("if best == old and not best_cost < old_cost:", _AFTER_TIE),
    _LS + "xǁLinkStateRouterǁ_choose__mutmut_53": ("if best == old or not best_cost <= old_cost:", _AFTER_TIE),
    # aspan/fields.py
    "aspan.fields.x_to_fixed__mutmut_7": ("(0.0 if x <= 0.0 else", _CLAMP),
    "aspan.fields.x_to_fixed__mutmut_12": ("1.0 if x >= 1.0 else x)", _CLAMP),
    "aspan.fields.x_quantise__mutmut_8": ("(0.0 if x <= 0.0 else", _CLAMP),
    "aspan.fields.x_quantise__mutmut_13": ("1.0 if x >= 1.0 else x)", _CLAMP),
    "aspan.fields.xǁAspanFieldsǁstamped__mutmut_12": (
        "return cls(1.0, quantise(pkt_qos), snoop_after, snoop_limit, )", "snoop_count's default is 0"),
    # tcp_user/sack.py
    _SACK + "xǁScoreboardǁadd__mutmut_43": ("if blocks[j][1] >= new_end:", _SAME_VALUE),
    _SACK + "xǁScoreboardǁadvance__mutmut_5": (
        "while blocks and blocks[0][0] <= una:", "a range starting at SND.UNA is trimmed by 0 octets to start at it"),
    _SACK + "xǁScoreboardǁadvance__mutmut_22": ("return", "the loop is the function's last statement: leaving it is returning"),
    _SACK + "xǁScoreboardǁskip__mutmut_15": ("if i >= 0 and blocks[i][1] >= seq:", "at seq == the range's end it returns that end: seq"),
    _SACK + "xǁScoreboardǁsacked_between__mutmut_3": ("if s > hi:", _ADDS_ZERO),
    _SACK + "xǁScoreboardǁsacked_between__mutmut_5": ("if e >= lo:", _ADDS_ZERO),
    _SACK + "xǁScoreboardǁpipe__mutmut_7": ("if high_rxt >= a:", _ADDS_ZERO),
    _SACK + "xǁScoreboardǁpipe__mutmut_21": ("if high_data >= top:", _ADDS_ZERO),
    _SACK + "xǁScoreboardǁpipe__mutmut_25": ("if high_rxt >= top:", _ADDS_ZERO),
    _SACK + "xǁReassemblyǁadd__mutmut_30": ("if start <= b[0]:", "at start == b[0] it prepends nothing"),
    _SACK + "xǁReassemblyǁadd__mutmut_39": ("added = b[0] - start", "added is 0 there: = and += agree"),
    _SACK + "xǁReassemblyǁpull__mutmut_13": ("if e >= rcv_nxt:", _ADDS_ZERO),
    _SACK + "xǁReassemblyǁsack_blocks__mutmut_6": (
        "if seq <= rcv_nxt:", "no held block starts at or below RCV.NXT (the connection stores only data above it "
        "and pulls every block it reaches), so an entry equal to RCV.NXT lies in no block and is skipped anyway"),
    _SACK + "xǁReassemblyǁsack_blocks__mutmut_22": (
        "if seq > s + len(data) or s in seen:", "an entry is the start of data the node stored (never empty), "
        "and blocks merge when they touch: no held block ends at an entry"),
    # aspan/ackall.py
    _AA + "on_data__mutmut_21": ("if length >= st.seg_len:", _SAME_VALUE),
    _AA + "_ack_sender__mutmut_1": (
        "assert st.acked_to is not None or st.edge is not None", "every caller has checked both already"),
    _AA + "_ack_sender__mutmut_17": ("self._generate(None, st.template", _UNUSED_ARG),
    _AA + "on_ack__mutmut_5": ("super().on_ack(flow, ack, now, window=None, snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _AA + "on_ack__mutmut_6": ("super().on_ack(flow, ack, now, window=window, snack=None, packet=packet)", _CLASSIC_ON_ACK),
    _AA + "on_ack__mutmut_7": ("super().on_ack(flow, ack, now, window=window, snack=snack, packet=None)", _CLASSIC_ON_ACK),
    _AA + "on_ack__mutmut_11": ("super().on_ack(flow, ack, now, snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _AA + "on_ack__mutmut_13": ("super().on_ack(flow, ack, now, window=window, snack=snack, )", _CLASSIC_ON_ACK),
    _AA + "on_ack__mutmut_12": ("super().on_ack(flow, ack, now, window=window, packet=packet)", _CLASSIC_ON_ACK),
    _AA + "_may_rxmit__mutmut_5": ("return super()._may_rxmit(None, useq, entry)", _UNUSED_ARG),
    _AA + "_may_rxmit__mutmut_6": ("return super()._may_rxmit(st, None, entry)", _UNUSED_ARG),
    # aspan/snoop_classic.py
    "aspan.snoop_classic.xǁClassicFlowǁref__mutmut_1": ("(self.last_ack is not None) and False", _UNWRAP_REF),
    _SC + "_unwrap_ack__mutmut_2": ("(ref is None) and False", _SAME_FLOW),
    _SC + "__init____mutmut_1": ("super().__init__(None, config, emit)", _SC_NO_NODE),
    _SC + "_clean__mutmut_17": ("e.snd_time >= latest", _SAME_VALUE),
    _SC + "_clean__mutmut_72": ("clean_rtt <= st.min_rtt", _SAME_VALUE),
    _SC + "next_timer__mutmut_6": ("st.timer <= best", _SAME_VALUE),
    _SC + "on_data__mutmut_28": ("end >= st.high_end", _SAME_VALUE),
    _SC + "on_data__mutmut_63": ("useq >= st.last_seen", _SAME_VALUE),
    _SC + "on_data__mutmut_9": ("cached=None", _FALSY),
    _SC + "on_data__mutmut_41": ("cache = None", _FALSY + ", and on_data then returns False"),
    _SC + "on_data__mutmut_65": ("cache = None", _FALSY + ", and on_data then returns False"),
    _SC + "_dupack_classic__mutmut_47": ("if st.exp_dupacks >= 0:", _SC_THEN_RETURNS),
    _SC + "_expire__mutmut_45": ("(st.timer is not None) or True", _SC_ARMED),
    _SC + "_expire__mutmut_48": ("if st.timer is not None else 1.0", _SC_ARMED),
    _SC + "_insert__mutmut_58": ("(tail is not None) or True", _SC_JUST_ADDED),
    _SC + "awaited__mutmut_6": ("tail <= uack <= tail + st.cache.entries[tail][0]", _SC_NONE_AT_ACK),
    # aspan/cache.py, aspan/snack.py, aspan/slack.py, aspan/events.py
    "aspan.cache.x_unwrap__mutmut_4": ("(seq32 - ref - HALF) % SEQ_MOD", _MINUS_HALF),
    "aspan.cache.xǁFlowCacheǁadd__mutmut_7": (
        "seq >= self.seqs[-1]", "a seq equal to the last cached one is in entries already: add returned before"),
    _SN + "on_ack__mutmut_5": (_CALL + "window=None, snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _SN + "on_ack__mutmut_6": (_CALL + "window=window, snack=None, packet=packet)", _CLASSIC_ON_ACK),
    _SN + "on_ack__mutmut_7": (_CALL + "window=window, snack=snack, packet=None)", _CLASSIC_ON_ACK),
    _SN + "on_ack__mutmut_11": (_CALL + "snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _SN + "on_ack__mutmut_12": (_CALL + "window=window, packet=packet)", _CLASSIC_ON_ACK),
    _SN + "on_ack__mutmut_13": (_CALL + "window=window, snack=snack, )", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_15": (_CALL + "window=None, snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_16": (_CALL + "window=window, snack=None, packet=packet)", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_17": (_CALL + "window=window, snack=snack, packet=None)", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_21": (_CALL + "snack=snack, packet=packet)", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_22": (_CALL + "window=window, packet=packet)", _CLASSIC_ON_ACK),
    _SL + "on_ack__mutmut_23": (_CALL + "window=window, snack=snack, )", _CLASSIC_ON_ACK),
    _SL + "_expire__mutmut_28": ("self._generate(None, st.ack_template", _UNUSED_ARG),
    "aspan.events.xǁEventSinkǁflush_counts__mutmut_1": (
        "final: bool = True", "a Protocol's method body never runs: EventSink only types the sinks"),
    "aspan.events.xǁEventWriterǁflush_counts__mutmut_1": (
        "final: bool = True", "EventWriter.flush_counts reads neither argument and returns None (FlowLog overrides it)"),
    # routing/topology/graph.py and routing/topology/routes.py
    "routing.topology.graph.x_least_cost_next_hops__mutmut_4": (
        "cost = link_cost or (lambda u, v: 2.0)", "every link costing 2 instead of 1 scales every path alike: "
        "the same least-cost paths and ties"),
    "routing.topology.graph.x_least_cost_next_hops__mutmut_25": ("rev = dg.reverse(copy=None)", _VIEW),
    "routing.topology.graph.x_least_cost_next_hops__mutmut_26": ("rev = dg.reverse(copy=True)", _VIEW),
    "routing.topology.graph.x_least_cost_next_hops__mutmut_39": (
        "if n == d and n not in dist:", "d itself: no neighbour's cost (> 0) plus distance equals its 0; an "
        "unreachable n: none of its neighbours with a link from it is reachable either (`v in dist` comes "
        "first): no entry either way"),
    "routing.topology.graph.x_least_cost_next_hops__mutmut_55": ("):", "_REL_TOL is 1e-9, math.isclose's default rel_tol"),
    "routing.topology.routes.xǁRouteTableǁ__init____mutmut_3": ("self._next: dict[str, str] = None", "_set replaces it at once"),
    "routing.topology.routes.x__walk_problems__mutmut_9": ("if nxt is None and nxt not in name_of:", _NODE_ADDRS),
    # routing/medium/propagation.py
    "routing.medium.propagation.x_log_distance_loss_db__mutmut_1": (
        "if distance_m < REFERENCE_M:", "at d = d0 the formula adds 10 n log10(1) = 0: L(d0) either way"),
    "routing.medium.propagation.x_log_distance_loss_db__mutmut_7": (
        "math.log10(distance_m * REFERENCE_M)", "d0 is 1 m: d x d0 = d / d0"),
    # routing/medium/dcf.py
    _MED + "_basic_rate_set__mutmut_42": (
        "if r.kbps <= round(mbps * 1001))", "basic_rate_mbps is itself a mandatory rate (refused above otherwise), "
        "and 0.1 % above it reaches no other: the closest two, 1 and 2 Mb/s, are a factor 2 apart"),
    _MED + "ǁMediumǁ_heard__mutmut_21": (
        "tx.nav_ns > 1:", "a Duration field is 0 (Ack, group-addressed data) or at least SIFS + an Ack: never 1 ns"),
    _MED + "ǁMediumǁ_on_ack_end__mutmut_5": (
        "self._heard(ack, None)", "_heard reads the time only to set a NAV from a Duration above 0, and an Ack's "
        "Duration is 0 (9.2.5.2, outside a TXOP)"),
    _MED + "ǁMediumǁ_done__mutmut_2": ("st.in_exchange = None", "in_exchange is read only as a truth value: None is False"),
    _MED + "ǁMediumǁ_done__mutmut_15": (
        "rts = self.phy.uses_rts(frame.nbytes, )", "_done reads rts only after a failed exchange, and a "
        "group-addressed frame's ends in success (no Ack is awaited): acked's default True changes nothing"),
    _MED + "ǁMediumǁ_busy__mutmut_4": (
        "if s.count_from is not None or s.attempt_at > now:", "_freeze returns first for a station that is not "
        "counting (count_from None) or whose attempt is not later than now: calling it in more cases changes nothing"),
    _MED + "ǁMediumǁ_busy__mutmut_6": (
        "if s.count_from is not None and s.attempt_at >= now:", "_freeze returns first for a station whose "
        "attempt is not later than now (it transmits in that slot anyway)"),
    _MED + "ǁMediumǁ_idle__mutmut_7": (
        "if s.backoff is not None and not s.in_exchange or s.count_from is None:", _CONTEND_GUARD),
    _MED + "ǁMediumǁ_idle__mutmut_8": (
        "if s.backoff is not None or not s.in_exchange and s.count_from is None:", _CONTEND_GUARD),
    _MED + "ǁMediumǁ_on_data_end__mutmut_38": ("self._done(sender, t, success=None)", _GROUP_DONE),
    _MED + "ǁMediumǁ_on_data_end__mutmut_42": ("self._done(sender, t, success=False)", _GROUP_DONE),
    _MED + "ǁMediumǁ_contend__mutmut_1": (
        "if st.busy or st.in_exchange or st.backoff is None and st.count_from is not None:", _CONTEND_CALLERS),
    _MED + "ǁMediumǁ_contend__mutmut_2": (
        "if st.busy or st.in_exchange and st.backoff is None or st.count_from is not None:", _CONTEND_CALLERS),
    _MED + "ǁMediumǁ_contend__mutmut_19": (
        "st.token += 2", "a token is only compared for equality with the one a scheduled attempt carries, and "
        "only grows: + 2 invalidates that attempt as + 1 does"),
    _MED + "ǁMediumǁ_on_attempt__mutmut_4": ("st.backoff = None", _RESPONDING),
    _MED + "ǁMediumǁ_on_attempt__mutmut_5": ("st.backoff = 1", _RESPONDING),
    _MED + "ǁMediumǁ_radiate__mutmut_32": (
        "responder.responding = 1", "a station has at most one frame on the air, so none of its responses is "
        "on the air when one starts: responding is 0 there, and 0 + 1 is 1"),
    _MED + "ǁMediumǁ_freeze__mutmut_1": ("if st.count_from is None and st.attempt_at <= now:", _FREEZE_GUARD),
    _MED + "ǁMediumǁ_freeze__mutmut_3": ("if st.count_from is None or st.attempt_at < now:", _FREEZE_GUARD),
    _MED + "ǁMediumǁ_freeze__mutmut_4": (
        "if now >= st.count_from:", "at now == count_from it takes (now - count_from) // slot = 0 slots off"),
    _MED + "ǁMediumǁ_freeze__mutmut_12": (
        "st.token += 2", "a token is only compared for equality with the one a scheduled attempt carries, and "
        "only grows: + 2 invalidates that attempt as + 1 does"),
    _MED + "ǁMediumǁ_send_rts__mutmut_17": ("frame, kind=None,", _RTS_KIND),
    _MED + "ǁMediumǁ_send_rts__mutmut_31": ('frame, kind="XXrtsXX",', _RTS_KIND),
    _MED + "ǁMediumǁ_send_rts__mutmut_32": ('frame, kind="RTS",', _RTS_KIND),
    # routing/drivers/station.py
    "routing.drivers.station.xǁStationRecorderǁstop__mutmut_1": ("self._thread.join(timeout=None)", _JOIN),
    "routing.drivers.station.xǁStationRecorderǁstop__mutmut_2": ("self._thread.join(timeout=7.0)", _JOIN),
    # routing/medium/reception.py
    "routing.medium.reception.x_frame_success__mutmut_14": (
        "if min(b, end) >= max(a, start)]", "an interferer that only touches the frame becomes a span of length 0 "
        "at the frame's start or end: no cut inside a section, and no chunk (t0 < t1) lies within it"),
    "routing.medium.reception.x_frame_success__mutmut_31": ("if s0 <= t < s1)", "s0 is in the set of cuts already"),
    "routing.medium.reception.x_frame_success__mutmut_32": ("if s0 < t <= s1)", "s1 is in the set of cuts already"),
    # routing/medium/rate_control/minstrel.py
    _ML + "_update__mutmut_41": (
        "if self.throughput(i) > 1)", "a throughput above 0 is at least 10 % / the longest average frame (1200 "
        "bytes at 1 Mb/s with its Ack and contention, 10.5 ms): 9.5 frames a second, above 1"),
    _ML + "_retry_count__mutmut_21": (
        "tx_time += slot_ns * cw / 2 + per_try", "slot_ns is slot_us x 1000, so slot_ns x cw is even: / and // agree"),
    _ML + "_retry_count__mutmut_14": (
        "tx_time = 1", "every term of tx_time is a multiple of 500 ns (slot_ns x cw / 2, DIFS, TXTIMEs, SIFS in "
        "whole microseconds): tx + 1 >= 6 ms exactly when tx >= 6 ms"),
    _ML + "_sample_rate__mutmut_18": ("if delta >= 2 * n:", "at delta == 2 n it forgives delta - 2 n = 0 frames"),
    # routing/medium/rates.py
    _RATES + "x_dsss_rate__mutmut_24": ("DSSS if kbps <= 2001 else HR_DSSS", _KBPS_SET),
    _RATES + "x_control_response_rate__mutmut_30": ("data_rate.short_preamble and kbps > 1001)", _KBPS_SET),
    _RATES + "x_ofdm_rate__mutmut_19": (
        "n_dbps=OFDM_N_DBPS[mbps], )", "band_ghz=2.4 is Rate's default: the same Rate without it"),
    _RATES + "x_ht20_rate__mutmut_17": (
        "kbps = round(n_dbps * 1000001.0 /", "1 ppm more moves no HT20 rate across a rounding boundary: the "
        "16 rates of Table 19-27 (tests/test_rates.py lists them) round to the same kbit/s"),
    _RATES + "x_ht20_rate__mutmut_31": ('("" if band_ghz <= 3 else "-5g")', _BANDS),
    _RATES + "x_ht20_rate__mutmut_32": ('("" if band_ghz < 4 else "-5g")', _BANDS),
    _RATES + "x__response_class__mutmut_5": ("(ERP_OFDM,) if rate.band_ghz <= 3 else (OFDM,)", _BANDS),
    _RATES + "x__response_class__mutmut_6": ("(ERP_OFDM,) if rate.band_ghz < 4 else (OFDM,)", _BANDS),
    # routing/forwarding/step.py
    _STEP + "ǁForwardingStepǁlost_from__mutmut_3": (
        "if (frm is not None) or True else None", "link_lost has no None key: the lookup gives None, "
        "the node's model, as the guard does"),
    # etx/estimator.py
    _ETX + "ǁProbeWindowǁ__init____mutmut_22": ("self._highest = -2", "every reader tests _highest < 0 or >= 0"),
    _ETX + "ǁProbeWindowǁ__init____mutmut_23": ("self._origin = None", _FIRST_PROBE),
    _ETX + "ǁProbeWindowǁ__init____mutmut_24": ("self._origin = 1", _FIRST_PROBE),
    _ETX + "ǁProbeWindowǁreset__mutmut_7": ("self._highest = -2", "every reader tests _highest < 0 or >= 0"),
    _ETX + "ǁProbeWindowǁreset__mutmut_8": ("self._origin = None", _FIRST_PROBE),
    _ETX + "ǁProbeWindowǁreset__mutmut_9": ("self._origin = 1", _FIRST_PROBE),
    _ETX + "ǁProbeWindowǁon_probe__mutmut_20": (
        "if seq - high > w:", "at a jump of exactly W the ring-range branch clears and counts all W slots, "
        "as the jump branch does"),
    _ETX + "ǁProbeWindowǁon_probe__mutmut_56": (
        "flags.count(1, None, hi + 1)", "a start of None is 0 for bytearray.count"),
    _ETX + "ǁProbeWindowǁon_probe__mutmut_83": (
        "if seq >= high - w:", "seq == highest - W shares its slot with highest, which is set: the "
        "in-window branch credits nothing either"),
    _ETX + "ǁProbeWindowǁon_probe__mutmut_86": (
        "if seq > self._origin and", "the origin's slot is set while it is in the window: nothing to credit"),
    _ETX + "ǁEtxTableǁnext_probe__mutmut_1": (
        "next_probe(None)", "LinkEstimator.next_probe does not read `now`"),
    _ETX + "ǁEtxTableǁquality__mutmut_1": ("e = None", _TABLE_LOOKUP),
    _ETX + "ǁEtxTableǁquality__mutmut_2": ("e = self._links.get(None)", _TABLE_LOOKUP),
    _ETX + "ǁEtxTableǁquality__mutmut_4": ("if (e is None) or True else e", _TABLE_LOOKUP),
    # tcp_user/congestion.py
    _CC + "ǁCongestionControlǁon_sack_blocks__mutmut_1": (
        "return 1", "only Reno uses the base's count, and Reno.is_dupack does not read it"),
    _CC + "ǁCongestionControlǁon_rto__mutmut_29": ("self.in_recovery = None", _TRUTH),
    _CC + "ǁCongestionControlǁon_rto__mutmut_35": ("self.fast_rtx_pending = None", _TRUTH),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_5": ("self.fast_rtx_pending = None", _TRUTH),
    _CC + "ǁCongestionControlǁon_rto__mutmut_34": (
        "self.lt_extra = 1", "a one-byte allowance is never used: sender SWS avoidance sends a partial "
        "segment only when it is at least half the largest window the peer offered, and the next ACK resets it"),
    _CC + "ǁRenoǁon_dupack__mutmut_30": ("self.lt_extra = None", _LT_IN_RECOVERY),
    _CC + "ǁRenoǁon_dupack__mutmut_31": ("self.lt_extra = 1", _LT_IN_RECOVERY),
    _CC + "ǁSackRecoveryǁon_recovery_ack__mutmut_2": (
        "self.exit_recovery(None)", "in RFC 6675 recovery cwnd stays ssthresh, so leaving it changes "
        "nothing and logs no cwnd event: its time is never written"),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_7": (
        "if una <= conn._snd_max:", "in recovery SND.UNA < SND.MAX: an ACK of everything reaches "
        "RecoveryPoint and ends recovery before the next output"),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_25": (
        "end = una + max(n, 2)", "n < 2 only for a one-byte segment followed by SACKed data (else the "
        "retransmission would be longer) or a FIN: HighRxt one octet further lies in SACKed data or past "
        "HighData, which NextSeg and SetPipe do not look at"),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_26": ("if end >= self.high_rxt:", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_57": ("s = a if a >= high_rxt else high_rxt", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_50": ("start = -2", _NEVER_ZERO),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_61": ("if start <= 0:", _NEVER_ZERO),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_62": ("if start < 1:", _NEVER_ZERO),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_69": (
        "if (nxt < data_end) or True else 0", "rule (2) runs only for nxt < end_seq <= data_end + 1, so "
        "nxt >= data_end means nxt == data_end, where min(mss, 0) is 0 too"),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_111": ("s = a if a >= high_rxt else high_rxt", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_133": ("if start + n >= self.high_rxt:", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_97": ("n = n if n == 0 or room > n else room", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_119": ("if start > 0 else 0", _NEVER_ZERO),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_120": ("if start >= 1 else 0", _NEVER_ZERO),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_124": (
        "return", "the loop is the function's last statement: leaving it is returning"),
    _CC + "ǁCongestionControlǁexit_recovery__mutmut_1": ("self.in_recovery = None", _TRUTH),
    _CC + "ǁCongestionControlǁlimited_transmit__mutmut_2": (
        "self.dupacks <= self.config.dupack_threshold", "at dupacks == DupThresh outside recovery (a "
        "guarded dupack) it sets lt_extra to 2 SMSS, what the second dupack set"),
    _CC + "ǁSackRecoveryǁ__init____mutmut_3": ("self.high_rxt = None", _HIGH_RXT_DEAD),
    _CC + "ǁSackRecoveryǁ__init____mutmut_4": ("self.high_rxt = 1", _HIGH_RXT_DEAD),
    _CC + "ǁSackRecoveryǁon_sack_blocks__mutmut_20": ("if s <= ack:", _SAME_VALUE),
    _CC + "ǁSackRecoveryǁon_sack_blocks__mutmut_23": (
        "if e < s or e > high:", "an empty block (e == s) adds nothing: Scoreboard.add returns 0 for it"),
    _CC + "ǁSackRecoveryǁenter_recovery__mutmut_15": ("self.lt_extra = None", _LT_IN_RECOVERY),
    _CC + "ǁSackRecoveryǁenter_recovery__mutmut_16": ("self.lt_extra = 1", _LT_IN_RECOVERY),
    _CC + "ǁCongestionControlǁgrow__mutmut_9": ("cwnd += newly if newly <= mss else mss", _SAME_VALUE),
    _CC + "ǁCongestionControlǁgrow__mutmut_18": (
        "cwnd += inc if inc > 1 else 1", "at inc == 1 both add one byte"),
    # the handshake's acknowledgement of the SYN runs on_new_ack before any data: it resets
    # dupacks, lt_extra, _last_rto_una and (ack >= RecoveryPoint 0) rto_recovery
    _CC + "ǁCongestionControlǁ__init____mutmut_4": ("self.dupacks = None", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_5": ("self.dupacks = 1", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_6": ("self.lt_extra = None", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_7": ("self.lt_extra = 1", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_14": ("self.rto_recovery = None", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_15": ("self.rto_recovery = True", _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_17": ('self._last_rto_una: int | None = ""', _SYN_ACKED),
    _CC + "ǁCongestionControlǁ__init____mutmut_8": ("self.in_recovery = None", _TRUTH),
    _CC + "ǁCongestionControlǁ__init____mutmut_12": ("self.fast_rtx_pending = None", _TRUTH),
    _CC + "ǁCongestionControlǁ__init____mutmut_13": (
        "self.fast_rtx_pending = True", "the first output comes after the handshake with nothing "
        "outstanding (SND.UNA == SND.MAX): the flag is cleared without a retransmission"),
    _CC + "ǁCongestionControlǁ__init____mutmut_11": (
        "self.recovery_point = 1", "SND.UNA is >= 1 from the SYN's acknowledgement on: `una >= 0` and "
        "`una >= 1` (SACK), `una < 0` and `una < 1` (Reno's guard) agree"),
    _CC + "ǁCongestionControlǁon_new_ack__mutmut_4": (
        "self.lt_extra = 1", "a one-byte allowance is never used: sender SWS avoidance sends a partial "
        "segment only when it is at least half the largest window the peer offered"),
    _CC + "ǁCongestionControlǁon_new_ack__mutmut_5": ('self._last_rto_una = ""', '"" differs from every SND.UNA, as None does'),
    _CC + "ǁCongestionControlǁon_new_ack__mutmut_8": ("self.rto_recovery = None", _TRUTH),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_86": ("(room >= 0 and 2 * room", _TINY_WINDOW),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_87": ("(room > 1 and 2 * room", _TINY_WINDOW),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_96": (
        "n = n if n == 1 or room >= n else room", "with n == 1 the branch is reached only with room >= 1 "
        "(room >= n, or the partial case's room > 0): both keep n"),
    _CC + "ǁSackRecoveryǁ_send_in_recovery__mutmut_75": (
        "if nxt <= data_end else 0", "at nxt == data_end min(mss, 0) is 0, what the else gives"),
    # aspan/agent.py
    "aspan.agent.xǁSnoopAgentǁexpire_idle__mutmut_16": ("freed = n", "freed is read only as a truth value"),
    "aspan.agent.xǁSnoopAgentǁexpire_idle__mutmut_17": ("freed -= n", "freed is read only as a truth value"),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_1": ("st = None", _FAST_PATH),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_2": ("st = self._flows.get(None)", _FAST_PATH),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_12": ("cached=None", _FALSY),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_44": ("cached=None", _FALSY),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_21": ("(last is not None) and False", _UNWRAP_REF),
    "aspan.agent.xǁSnoopAgentǁon_ack__mutmut_7": ("(last is not None) and False", _UNWRAP_REF),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_31": ("(seq - ref - HALF)", _MINUS_HALF),
    "aspan.agent.xǁSnoopAgentǁon_ack__mutmut_17": ("(ack - ref - HALF)", _MINUS_HALF),
    "aspan.agent.xǁSnoopAgentǁon_data__mutmut_37": ("end >= high", "at end == high it stores the value it holds"),
    "aspan.agent.xǁSnoopAgentǁon_ack__mutmut_11": ("(ref is None) and False", _SAME_FLOW),
    "aspan.agent.xǁSnoopAgentǁ_new_ack__mutmut_2": ('st.rtx_seq = ""', "\"\" differs from every ACK, as None does"),
    "aspan.agent.xǁSnoopAgentǁ_new_ack__mutmut_3": ("st.expected_dupacks = None", _RTX_RESET),
    "aspan.agent.xǁSnoopAgentǁ_new_ack__mutmut_4": ("st.expected_dupacks = 1", _RTX_RESET),
    "aspan.agent.xǁSnoopAgentǁ_dupack__mutmut_27": ('"every" and st.rtx_seq != uack', _RTX_RESET),
    "aspan.agent.xǁSnoopAgentǁ_dupack__mutmut_29": ('"XXeveryXX"', _RTX_RESET),
    "aspan.agent.xǁSnoopAgentǁ_dupack__mutmut_30": ('"EVERY"', _RTX_RESET),
    "aspan.agent.xǁSnoopAgentǁ_dupack__mutmut_42": (
        "max(1, ((st.high_end", "expected_dupacks -1 or 0 alike: the next dupack resends (<= 0)"),
    # routing/overlay/auth.py
    "routing.overlay.auth.xǁReplayWindowǁ__init____mutmut_3": ("self.top = 1", _NO_SEQ_0),
    "routing.overlay.auth.xǁReplayWindowǁ__init____mutmut_5": ("self.bits = 1", _NO_SEQ_0),
    "routing.overlay.auth.xǁReplayWindowǁaccept__mutmut_15": (
        "if shift <= self.size else 1",
        "at shift == size the shifted bitmap masked to size bits is 1, which the else branch gives"),
    "routing.overlay.auth.xǁMeshAuthǁverify__mutmut_3": (
        "if (sender is not None) or True else None",
        "the neighbour table has no None key: the lookup gives None, a stranger, as the guard does"),
    "routing.overlay.auth.xǁMeshAuthǁ_link_to__mutmut_1": ("link = None", _LINK_CACHE),
    "routing.overlay.auth.xǁMeshAuthǁ_link_to__mutmut_2": ("link = self._out.get(None)", _LINK_CACHE),
}

KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass
class ModuleScore:
    module: str
    statuses: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)

    @property
    def mutants(self) -> int:
        return len(self.statuses)

    @property
    def killed(self) -> int:
        return sum(s in KILLED for s in self.statuses.values())

    @property
    def equivalent(self) -> int:
        return sum(s == "equivalent" for s in self.statuses.values())

    @property
    def survivors(self) -> list[str]:
        return sorted(n for n, s in self.statuses.items() if s not in KILLED and s != "equivalent")

    @property
    def score(self) -> float:
        live = self.mutants - self.equivalent
        return self.killed / live if live else 1.0

    def row(self) -> str:
        return (f"| `{self.module}` | {self.mutants} | {self.killed} | {self.equivalent} | {len(self.survivors)} "
                f"| {100 * self.score:.1f} % |")


def slug(module: str) -> str:
    return module.replace("/", "_").removesuffix(".py")


def mutmut_table(module: str) -> str:
    """The ``[tool.mutmut]`` table of one module's run."""
    def toml_list(xs: list[str]) -> str:
        return "[" + ", ".join(json.dumps(x) for x in xs) + "]"
    tests = [t for t in MODULE_TESTS[module] if (ROOT / t).exists()]
    deselect = [a for t in DESELECT.get(module, []) for a in ("--deselect", t)]
    return ("\n[tool.mutmut]\n"
            f"source_paths = {toml_list(PACKAGES)}\n"
            f"also_copy = {toml_list(NEUTRAL)}\n"
            f"only_mutate = {toml_list([module])}\n"
            f"pytest_add_cli_args = {toml_list(['-p', 'no:cacheprovider', '-m', 'not root and not slow', '-q', *deselect])}\n"
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
            # a mutant's CPU limit: 2 x 5 x (its tests' clean time + 2 s); an endless loop is a timeout
            "timeout_multiplier = 5.0\n"
            "timeout_constant = 2.0\n"
            "use_git_change_detection = false\n")


def prepare(module: str) -> Path:
    """A fresh copy of the tree for ``module``'s run, with its mutmut table."""
    work = WORK / slug(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for pkg in PACKAGES + ["tests"]:
        shutil.copytree(ROOT / pkg, work / pkg, ignore=ignore)
    for mod in NEUTRAL:
        shutil.copy2(ROOT / mod, work / mod)
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + mutmut_table(module))
    return work


def mutmut() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    if not exe.exists():
        raise SystemExit("mutmut is not installed in this venv: pip install -e '.[mutation]'")
    return str(exe)


def resume(module: str) -> list[str]:
    """Bring the tests of ``module``'s last run up to date, for a run of its survivors only.

    Only the test files are copied again: the mutated module and the ``[tool.mutmut]`` table stay as
    they were (mutmut resets every result when its test selection changes, so a module whose list of
    test files changed needs a fresh run).  A test added cannot revive a killed mutant, so the killed
    keep their verdict; mutmut traces the new tests before it runs the survivors again."""
    work = WORK / slug(module)
    toml = work / "pyproject.toml"
    if not toml.exists():
        raise SystemExit(f"{work}: no earlier run of {module} to resume")
    if mutmut_table(module) not in toml.read_text():
        raise SystemExit(f"{module}: its test files or settings changed since its last run: run it afresh")
    src = (ROOT / module).read_text()
    if (work / module).read_text() != src:
        raise SystemExit(f"{module} changed since its last run: run it afresh")
    shutil.rmtree(work / "tests")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return score(module).survivors


def run_module(module: str, only: list[str] | None = None) -> None:
    """mutmut on ``module`` in a fresh copy, or (``only``) on those mutants of its last run."""
    if only is not None and not only:
        print(f"== {module}: no survivor to run again")
        return
    work = WORK / slug(module) if only is not None else prepare(module)
    cmd = ["nice", "-n", "19", mutmut(), "run", "--max-children", "1", *(only or [])]
    print(f"== {module}: {' '.join(cmd)} (in {work.relative_to(ROOT)})", flush=True)
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    log = work / "mutmut-run.log"
    with log.open("w") as out:
        r = subprocess.run(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    print(f"   mutmut exit {r.returncode} after {time.monotonic() - t0:.0f} s (log: {log})")
    if r.returncode != 0:
        print(log.read_text(errors="replace")[-3000:])
        raise SystemExit(f"mutmut failed on {module}")


def mutant_line(work: Path, name: str) -> str:
    """The '+' line of one mutant's diff."""
    r = subprocess.run([mutmut(), "show", name], cwd=work, capture_output=True, text=True)
    plus = [ln[1:].strip() for ln in r.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(plus)


def score(module: str) -> ModuleScore:
    """The statuses of ``module``'s last run, with the equivalent mutants marked."""
    from mutmut.stats import status_by_exit_code
    work = WORK / slug(module)
    meta = work / "mutants" / (module + ".meta")
    if not meta.exists():
        raise SystemExit(f"{meta}: no mutmut results for {module}; run without --report first")
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    out = ModuleScore(module)
    for name, code in codes.items():
        status = status_by_exit_code[code]
        if name in EQUIVALENT:
            expected = EQUIVALENT[name][0]
            if status in KILLED or expected not in mutant_line(work, name):
                out.stale.append(name)
            else:
                status = "equivalent"
        out.statuses[name] = status
    return out


def print_equivalents(modules: list[str]) -> None:
    """The EQUIVALENT entries of ``modules`` as a markdown table (docs/MUTATION.md)."""
    print("| mutant | mutated line | why no test can kill it |")
    print("|---|---|---|")
    for module in modules:
        prefix = module.removesuffix(".py").replace("/", ".") + "."
        for name, (line, why) in EQUIVALENT.items():
            if name.startswith(prefix):
                cell = line.replace("|", "\\|")   # a `|` would end the markdown cell
                print(f"| `{name}` | `{cell}` | {why} |")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help=f"core modules (default all): {', '.join(MODULE_TESTS)}")
    ap.add_argument("--report", action="store_true", help="score the last runs again without running mutmut")
    ap.add_argument("--resume", action="store_true",
                    help="copy the tests again into each module's last run and run its survivors only "
                         "(the module and its list of test files unchanged since)")
    ap.add_argument("--survivors", action="store_true", help="print each surviving mutant's diff")
    ap.add_argument("--equivalents", action="store_true",
                    help="print the equivalent mutants of the modules, with their reasons, as markdown")
    args = ap.parse_args(argv)
    modules = args.modules or list(MODULE_TESTS)
    unknown = [m for m in modules if m not in MODULE_TESTS]
    if unknown:
        raise SystemExit(f"not a core module of the mutation run: {', '.join(unknown)}; expected {', '.join(MODULE_TESTS)}")
    if args.equivalents:
        print_equivalents(modules)
        return 0
    results = []
    for module in modules:
        if args.resume:
            run_module(module, resume(module))
        elif not args.report:
            run_module(module)
        results.append(score(module))
        if args.survivors:
            work = WORK / slug(module)
            for name in results[-1].survivors:
                print(subprocess.run([mutmut(), "show", name], cwd=work, capture_output=True, text=True).stdout)
    print("| module | mutants | killed | equivalent | survived | score |")
    print("|---|---|---|---|---|---|")
    failed = False
    for res in results:
        print(res.row())
        for name in res.stale:
            print(f"   stale equivalent entry (killed now, or its mutant changed): {name}")
        failed |= res.score < TARGET or bool(res.stale)
    return 1 if failed else 0
