"""Exact, hand-derived values for formula lines of the new analyses (the `budget` kinds, `serve
--draft-model` and `--residency`) that no other test pinned: each was found by changing the line and
watching every test of its module still pass."""

import math
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, write_config  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.ack_window import ack_window  # noqa: E402
from infracalc.analyses.attention_handoff import input_schedule  # noqa: E402
from infracalc.analyses.audio_timing import audio_timing  # noqa: E402
from infracalc.analyses.checkpoint_async import async_checkpoint  # noqa: E402
from infracalc.analyses.checkpoint_reshard import ranges  # noqa: E402
from infracalc.analyses.completion_reclaim import completion_reclaim  # noqa: E402
from infracalc.analyses.environment_budget import clone_placements  # noqa: E402
from infracalc.analyses.host_staging import host_staging  # noqa: E402
from infracalc.analyses.memory_pool import pool_capacity  # noqa: E402
from infracalc.analyses.merge_numerics import _quantized_sum, block_state, merge  # noqa: E402
from infracalc.analyses.moe_dedup import destinations, moe_dedup  # noqa: E402
from infracalc.analyses.packet_reorder import packet_reorder  # noqa: E402
from infracalc.analyses.remote_state import remote_state  # noqa: E402
from infracalc.analyses.retry_paths import MAX_PATHS, retry_paths, terminal_paths  # noqa: E402
from infracalc.analyses.routing_cost import minimum_hit, on_time  # noqa: E402
from infracalc.analyses.sequence_toy import sequence_toy, toy_values  # noqa: E402
from infracalc.analyses.serve import dflash  # noqa: E402
from infracalc.analyses.serve.residency import residency  # noqa: E402
from infracalc.analyses.server_scope import decode_collectives  # noqa: E402
from infracalc.analyses.slot_pipelines import fifo  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.load.dflash import load_drafter  # noqa: E402

MS = 10**6
G = 10**9


budget = budget_result


class AckWindow(unittest.TestCase):
    BASE = dict(input_bytes=1000, output_bytes=1000, segment_bytes=1000, upload_bits_per_s=8000,
                download_bits_per_s=8000, forward_s=Fraction(1), reverse_s=Fraction(1), initial_window=1000,
                max_window=10000, receive_window=10000, growth=1000, header_bytes=0, ack_bytes=0,
                rto_s=Fraction(100), model_s=Fraction(0))

    def test_two_requests_on_a_warm_connection(self):
        # 1,000 B segments at 8,000 b/s (1 s each way on the wire), 1 s one-way delays, zero-byte ACKs, no model
        # time. Request 1: upload sent 0-1 s, received 2; its ACK back at 3; download sent 2-3, received 4, its
        # ACK back at 5: the last ACK is 5 (the later of 3 and 5). Submitted on quiet, request 2 starts at 5:
        # upload 5-6, received 7; download 7-8, received 9 (the final image), ACK back at 10.
        r = ack_window(**dict(self.BASE, requests=2, strategy="reuse_warm", submit_on="quiet"))
        self.assertEqual([(q["complete_received_s_exact"], q["last_ack_s_exact"]) for q in r["requests"]],
                         [("4", "5"), ("9", "10")])
        self.assertEqual((r["complete_final_image_s_exact"], r["last_ack_s_exact"]), ("9", "10"))
        # a 2 s think time after the quiet instant: request 2 is submitted at 5 + 2 = 7
        r = ack_window(**dict(self.BASE, requests=2, strategy="reuse_warm", submit_on="quiet", think_s=Fraction(2)))
        self.assertEqual(r["requests"][1]["submit_s_exact"], "7")

    def test_reorder_peak_holds_the_segment_behind_the_loss(self):
        # 2,000 B in two 1,000 B segments, window 2,000: segment 0 (sent 0-1) is lost, segment 1 (sent 1-2)
        # arrives at 3 and waits behind the gap: 1,000 B held; the resend (RTO 5 s from 1: sent 6-7) arrives at 8
        # and releases both. The reorder peak is 1,000 B.
        r = ack_window(**dict(self.BASE, input_bytes=2000, initial_window=2000, rto_s=Fraction(5),
                              drop=("upload", 0)))
        up = r["transfers"][0]
        self.assertEqual((up["complete_received_s_exact"], up["peak_reorder_bytes"]), ("8", 1000))


class AttentionInput(unittest.TestCase):
    def test_loads_are_serial_on_the_copy_engine(self):
        # 10-tick loads, 1-tick computes, no latency, 3 slots: issues 0, 10, 20 (one load after the other),
        # ready 10, 20, 30, computes end 11, 21, 31
        r = input_schedule(10, 1, 3, 0, 3)
        self.assertEqual([(c["issue"], c["loaded"], c["compute_end"]) for c in r["chunks"]],
                         [(0, 10, 11), (10, 20, 21), (20, 30, 31)])
        self.assertEqual(r["finish_tick"], 31)


    def test_slot_bytes(self):
        # a 128 x 32 x 128 tile chunk: BF16 (128 + 128) x 32 x 2 B = 16,384 B per slot; 1, 2, 4, 8 slots
        r = budget("attention-input", "--model", "qwen3-8b")
        self.assertEqual(sorted({row["slots"]: row["slot_bytes"] for row in r["rows"]}.items()),
                         [(1, 16384), (2, 32768), (4, 65536), (8, 131072)])


class Audio(unittest.TestCase):
    def test_on_time_arrival_is_no_miss(self):
        # 10 ms frames, 5 ms model, 1 ms send, no delay, no jitter buffer: frame i captured by 10(i+1), model
        # 10(i+1)..10(i+1)+5, sent by 10(i+1)+6: arrivals 16, 26, 36 ms. Playback starts at the first arrival
        # (16 ms), deadlines 16, 26, 36: every frame arrives exactly on its deadline, none late, no stall.
        r = audio_timing(frame_ns=10 * MS, model_ns=[5 * MS] * 3, network_delay_ns=[0] * 3, send_ns=MS,
                         jitter_buffer_ns=0, sample_rate=8000, channels=1, sample_bytes=2)
        self.assertEqual([x["capture_ready_ns"] // MS for x in r["frame_rows"]], [10, 20, 30])
        self.assertEqual([x["deadline_ns"] // MS for x in r["frame_rows"]], [16, 26, 36])
        self.assertEqual((r["deadline_misses"], r["total_stall_ns"]), (0, 0))
        # three frames of 10 ms of source audio
        self.assertEqual(r["source_audio_ns"], 30 * MS)


class CompletionReclaim(unittest.TestCase):
    def test_payload_totals(self):
        # 4 operations of 100 B through 2 slots: 400 B in all, 200 B reserved by the slots
        r = completion_reclaim(operations=4, slots=2, submit_interval_ns=1, latency_ns=1, poll_interval_ns=1,
                               poll_batch=1, payload_bytes=100)
        self.assertEqual((r["total_payload_bytes"], r["reserved_slot_payload_bytes"]), (400, 200))


class DFlashTargetLayers(unittest.TestCase):
    def test_every_tapped_layer_must_exist(self):
        # test_serve_dflash's toy drafter (hidden 8, vocabulary 10) tapping layers 0 and 2 of a two-layer target:
        # layer 2 does not exist (the largest id is checked, not the smallest); tapping 0 and 1 is accepted
        toy = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 1,
               "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
               "vocab_size": 10, "block_size": 4, "dflash_config": {"target_layer_ids": [0, 2]}}
        target = type("Target", (), {"id": "toy-target", "vocab_size": 10, "hidden_size": 8, "layers": [None] * 2})
        with self.assertRaisesRegex(UserError, "taps target layer 2"):
            dflash.check(load_drafter(write_config(self, toy)), target, 1, 1, 4)
        toy["dflash_config"] = {"target_layer_ids": [0, 1]}
        dflash.check(load_drafter(write_config(self, toy)), target, 1, 1, 4)


class Environments(unittest.TestCase):
    def test_totals_are_per_environment_times_count(self):
        # private bytes = placement's bytes + 1 overhead: full 101, touched 41, dirty 6, dirty + hot 13; three
        # environments: 303, 123, 18, 39; with the shared template (100) added once: 403, 223, 118, 139.
        rows = clone_placements(environments=3, template=100, touched=40, dirty=5, hot_readonly=7, overhead=1,
                                local_budget=1000, bytes_per_s=1)
        self.assertEqual([r["total_local_bytes"] for r in rows], [303, 123, 18, 39])
        self.assertEqual([r["with_shared_template_bytes"] for r in rows], [403, 223, 118, 139])
        self.assertEqual([r["environments_in_budget"] for r in rows], [9, 24, 166, 76])   # 1000 // private


class GradientCast(unittest.TestCase):
    def test_gpu_cast_startup_adds_to_the_gpu_path(self):
        # The gpu path is cast then FP32 copy: a 1 ms startup of the GPU cast delays its ready time by exactly
        # 1 ms (1585152/244140625 s without it, test_gradient_cast), and leaves the cpu path as it was.
        args = ("cast", "--model", "qwen3-8b", "--link-bw", "32GB/s", "--cpu-cast-rate", "100GB/s",
                "--gpu-cast-rate", "1500GB/s", "--gpu-budget", "256MiB", "--host-budget", "512MiB")
        cpu, gpu = budget(*args, "--gpu-cast-startup", "1ms")["paths"]
        self.assertEqual(Fraction(gpu["ready_s_exact"]), Fraction(1585152, 244140625) + Fraction(1, 1000))
        self.assertEqual(cpu["ready_s_exact"], "301056/48828125")


class HostStaging(unittest.TestCase):
    def test_ring_edges_send_to_the_next_rank(self):
        # ring 0,2,1,3: rank ring[i] sends to ring[i + 1 mod 4]: 0>2, 2>1, 1>3, 3>0
        r = host_staging(message_bytes=8, numa=("A", "A", "B", "B"), ring=(0, 2, 1, 3), buffer_node=None,
                         pcie=G, dram=G, link=G)
        self.assertEqual([(e["sender_gpu"], e["receiver_gpu"]) for e in r["edges"]], [(0, 2), (2, 1), (1, 3), (3, 0)])


class ImageRequest(unittest.TestCase):
    def test_a_tie_with_local_is_not_strictly_faster(self):
        # 30 MB up at 100 Mb/s 2.4 s + round trip 0.1 s + model 0.3 s + 5 MB down 0.4 s = 3.2 s = a local 16/5 s
        r = budget("image-request", "--input-bytes", "30MB", "--output-bytes", "5MB", "--download-rate", "100Mb/s",
                   "--rtt", "1/10s", "--model-time", "3/10s", "--upload-rate", "100Mb/s", "--local-time", "16/5s")
        original = r["variants"][0]
        self.assertEqual((original["complete_s_exact"], original["remote_strictly_faster"]), ("16/5", False))


class MoeDedup(unittest.TestCase):
    def test_saved_bytes_are_the_differences(self):
        # clustered Qwen3-235B-A22B on 8 ranks (test_moe_dedup): dispatch 29,360,128 - 3,670,016 = 25,690,112;
        # combine 58,720,256 - 7,340,032 = 51,380,224
        r = moe_dedup(ranks=8, tokens_per_rank=64, experts=128, top_k=8, hidden=4096, pattern="clustered")
        self.assertEqual((r["dispatch_saved_bytes"], r["combine_saved_bytes"]), (25690112, 51380224))

    def test_spread_destinations(self):
        # token 2 of rank 1, top-3: experts on ranks (1 + 2 + j) mod 8 = 3, 4, 5, one each
        self.assertEqual(dict(destinations("spread", 8, 1, 2, 3)), {3: 1, 4: 1, 5: 1})

    def test_a_rank_holding_too_many_of_a_tokens_experts(self):
        # 3 ranks, 3 experts (one per rank), top-4 spread: ranks s, s+1, s+2, s -> two experts on rank s > 1
        with self.assertRaises(ValueError):
            moe_dedup(ranks=3, tokens_per_rank=1, experts=3, top_k=4, hidden=1, pattern="spread")


class Optimizer(unittest.TestCase):
    def test_adamw_takes_one_square_root_per_element(self):
        # Qwen3-8B's embedding 151,936 x 4,096 = 622,329,856 elements under AdamW: one square root each and
        # 14 scalar operations each (8,712,617,984)
        r = budget("optimizer", "--model", "qwen3-8b")
        embed = next(g for g in r["groups"] if g.get("pattern") == "embed_tokens.weight")
        self.assertEqual((embed["parameters"], embed["sqrt_ops"], embed["scalar_ops"]),
                         (622329856, 622329856, 14 * 622329856))


class PacketReorder(unittest.TestCase):
    def test_the_last_packet_carries_the_remainder(self):
        # 2,500 B in 1,024 B packets: 1,024 + 1,024 + 452; one path at 1 GB/s (1 B/ns), no delay: the packets end
        # at 1,024, 2,048 and 2,500 ns, each released on arrival
        r = packet_reorder(payload_bytes=2500, packet_bytes=1024, path_delays_ns=[0], path_rate=G)
        self.assertEqual([t["end_ns"] for t in r["transmissions"]], ["1024", "2048", "2500"])
        self.assertEqual((r["packets"], r["completion_ns"]), (3, "2500"))


class RemoteState(unittest.TestCase):
    def test_a_snapshot_of_exactly_the_local_room_fits(self):
        r = remote_state(payload_bytes=1000, reuses=1, remote_bandwidth=G, latency_ns=1, transaction_bytes=1,
                         transactions=1000, remote_startup_ns=0, bulk_bandwidth=G, bulk_startup_ns=0,
                         local_bandwidth=G, local_startup_ns=0, local_available_bytes=1000)
        self.assertTrue(r["fits_local_capacity"])

    def test_a_tie_reads_directly(self):
        # 1,000 B at 1 B/ns everywhere: staging = network 1,000 + local write 1,000 + one local read 1,000 =
        # 3,000 ns; a remote read with a 2,000 ns startup is 2,000 + 1,000 = 3,000 ns: equal, so no staging
        r = remote_state(payload_bytes=1000, reuses=1, remote_bandwidth=G, latency_ns=1, transaction_bytes=1,
                         transactions=1000, remote_startup_ns=2000, bulk_bandwidth=G, bulk_startup_ns=0,
                         local_bandwidth=G, local_startup_ns=0)
        self.assertEqual((r["direct_total_ns"], r["staged_total_ns"], r["selected"]), (3000, 3000, "direct"))


class AsyncCheckpoint(unittest.TestCase):
    def test_touching_pauses_are_one(self):
        # 1 B at 1 B/s (1 s upload), two slots, a snapshot every 2 s staged in 2 s: pauses [0, 2) and [2, 4)
        # touch: one pause [0, 4) of 4 s
        r = async_checkpoint(parameters=1, payload=1, snapshots=2, first=Fraction(0), interval=Fraction(2),
                             staging=Fraction(2), bandwidth=1, slots=2, failure=Fraction(100))
        self.assertEqual((r["pauses"], r["training_pause_s_exact"]), ([{"start_s": "0", "end_s": "4"}], "4"))


class CheckpointReshard(unittest.TestCase):
    def test_one_row_per_rank(self):
        # 4 rows of 3 on 4 ranks: a row each, element ranges of 3; 6 flat elements on 4 ranks: 6 = 4 x 1 + 2,
        # the first two ranks take one more: 2, 2, 1, 1
        self.assertEqual(ranges(4, 3, 4, "rows"), [(0, 3), (3, 6), (6, 9), (9, 12)])
        self.assertEqual(ranges(2, 3, 4, "flat"), [(0, 2), (2, 4), (4, 5), (5, 6)])


class MemoryPool(unittest.TestCase):
    def test_a_node_exactly_at_capacity_borrows_nothing(self):
        # node 0 needs 10 of its 10 B (short 0), node 1 5 of 10: no donor, nothing held, 5 B left free
        r = pool_capacity([10, 10], [10, 5], 1)
        self.assertEqual((r["donors"], r["borrowed_bytes"], r["free_after_pool_bytes"]), ({}, 0, [0, 5]))


class MergeNumerics(unittest.TestCase):
    def test_states_keep_the_maximum(self):
        # scores 0, ln 2 with values 1, 3: m = ln 2, l = e^-ln2 + 1 = 3/2, u = 1/2 x 1 + 3 = 7/2
        m, l, u = block_state([0.0, math.log(2)], [[1.0], [3.0]])
        self.assertEqual(m, math.log(2))
        self.assertAlmostEqual(l, 1.5, delta=1e-15)
        self.assertAlmostEqual(u[0], 3.5, delta=1e-15)
        # merging (0, 1, 1) with (ln 2, 1, 3): m = ln 2, l = 1/2 + 1, u = 1/2 + 3
        m, l, u = merge((0.0, 1.0, (1.0,)), (math.log(2), 1.0, (3.0,)))
        self.assertEqual(m, math.log(2))
        self.assertAlmostEqual((l, u[0]), (1.5, 3.5), delta=1e-15)

    def test_quantized_sum_weights_each_rounding(self):
        # 1 and 2 are E4M3 values: 1 x 3 + 2 x 1/2 = 4; a zero weight adds nothing
        self.assertEqual(_quantized_sum([1, 2, 5], [Fraction(3), Fraction(1, 2), 0], 1), 4)


class Residency(unittest.TestCase):
    def test_at_capacity_is_not_over(self):
        # test_serve_residency's intervals: tier X holds 60 B in [0, 5) and 80 B in [5, 15); at a 60 B capacity
        # only [5, 15) is over: 10 ns
        iv = [("a1", "X", "A", 4, 0, 10), ("a2", "X", "A", 8, 5, 15), ("b", "X", "B", 2, 0, 5),
              ("ay", "Y", "A", 8, 10, 20)]
        rows, _, _ = residency(iv, {"X": 60, "Y": None}, 10)
        self.assertEqual(rows[0]["over_capacity_nanoseconds"], 10)


class RetryPaths(unittest.TestCase):
    def test_path_names(self):
        def node(cost, seconds, outcomes):
            return {"cost": Fraction(cost), "seconds": Fraction(seconds), "cpu_seconds": Fraction(0),
                    "resident_bytes": 0, "outcomes": [(t, Fraction(p)) for t, p in outcomes]}
        graph = {"a": node(1, 2, [("success", "1/2"), ("b", "1/2")]), "b": node(3, 5, [("success", "1")])}
        r = retry_paths(nodes=graph, start="a", deadline_s=Fraction(10), tasks=1)
        self.assertEqual([row["nodes"] for row in r["paths"]], ["a", "a > b"])


    def test_path_limit_is_inclusive(self):
        # four attempts of 10 equal outcomes each, all to the next: 10^4 = 10,000 paths, exactly the limit (allowed);
        # one outcome of the last attempt split once more: 10,001 paths, refused
        def node(outcomes):
            return {"cost": Fraction(1), "seconds": Fraction(1), "cpu_seconds": Fraction(0), "resident_bytes": 0,
                    "outcomes": outcomes}
        graph = {a: node([(b, Fraction(1, 10))] * 10) for a, b in zip("abcd", ("b", "c", "d", "success"))}
        self.assertEqual((MAX_PATHS, len(terminal_paths(graph, "a"))), (10000, 10000))
        graph["d"] = node([("success", Fraction(1, 10))] * 9 + [("e", Fraction(1, 10))])
        graph["e"] = node([("success", Fraction(1, 2)), ("failure", Fraction(1, 2))])
        with self.assertRaises(ValueError):
            terminal_paths(graph, "a")


class RoutingCost(unittest.TestCase):
    def test_on_time_and_minimum_hit(self):
        # a hit (1/4 of requests) in 1 s and a miss in 2 s both meet a 3 s deadline: 1/4 + 3/4 = 1
        self.assertEqual(on_time({"hit": Fraction(1, 4), "hit_s": 1, "miss_s": 2}, 3), 1)
        # a deadline equal to the hit time is met: a = 1, b = 0 (a 5 s miss); quality 4/5, target 1/2: the
        # smallest hit fraction is (1/2) / (4/5) = 5/8
        self.assertEqual(minimum_hit({"hit_s": 1, "miss_s": 5, "quality": Fraction(4, 5)}, 1, Fraction(1, 2)),
                         Fraction(5, 8))


class RoutingMetadata(unittest.TestCase):
    def test_256_experts_fit_one_byte(self):
        # DeepSeek-V3: 256 routed experts, ids 0..255 fit uint8; 58 MoE layers x top-8 = 464 ids of 1 B per token,
        # + 24 B identity + 1 B validity bit(set) + 128 B header = 617 B
        r = budget("routing-metadata", "--model", "deepseek-v3", "--tokens", "1", "--encoding", "uint8",
                   "--token-rate", "1", "--bandwidth", "1GB/s")
        self.assertEqual((r["routed_id_bytes"], r["payload_bytes"]), (464, 617))


class SequenceToy(unittest.TestCase):
    def test_next_token_by_recomputing_the_prefix(self):
        # T = 4 known tokens plus the next: one call over positions 0..4 (n = 5). D 4, F 8, 3 layers:
        # Transformer weights 3 x (8 x 5 x 16 + 4 x 5 x 4 x 8) = 3,840, attention 3 x 16 x (1+2+3+4+5) = 720;
        # RNN 3 x 5 x 2 x 2 x 16 = 960
        work = {(w["model"], w["mode"]): w["matrix_flops"]
                for w in sequence_toy(tokens=4, layers=3, d=4, f=8, vocabulary=5)["work"]}
        self.assertEqual(work[("transformer", "next_token_prefix_recomputed")], 3840 + 720)
        self.assertEqual(work[("rnn", "next_token_prefix_recomputed")], 960)

    def test_state_written_per_token(self):
        # per token the RNN overwrites L D = 12 binary64 values (96 B), the Transformer appends 2 L D = 24 (192 B)
        states = sequence_toy(tokens=4, layers=3, d=4, f=8, vocabulary=5)["states"]
        written = {s["model"]: s["written_bytes"] for s in states if s["after_tokens"] == 1}
        self.assertEqual(written, {"rnn": 96, "transformer": 192})

    def test_rnn_second_step_adds_the_state_projection(self):
        # D = F = 1, one layer (test_sequence_toy's weights): Wx -5/32, Wh (seed 3: (17 + 11 + 21) mod 19 - 9 = 2)
        # 2/32; token 1 at position 1: table row 1 (seed 1: (34 + 11 + 7) mod 19 - 9 = 5) 5/32 + 2/64 = 3/16.
        # h1 = tanh(15/64 x -5/32); h2 = tanh(3/16 x -5/32 + h1 x 2/32)
        rows = toy_values(tokens=1, layers=1, d=1, f=1, vocabulary=2)
        second = next(r for r in rows if r["model"] == "rnn" and r["prefix_tokens"] == 2)
        h1 = math.tanh(15 / 64 * -5 / 32)
        self.assertAlmostEqual(second["recomputed"][0], math.tanh(3 / 16 * -5 / 32 + h1 * 2 / 32), delta=1e-16)


class ServerScope(unittest.TestCase):
    def test_the_selected_token_leaves_the_last_stage(self):
        ops = decode_collectives(layers_per_stage=[1, 1, 1], tp=2, pp=3, hidden=4, vocab=8, batch=1)
        sent = [op for op in ops if op[0] == "selected_token_to_first_stage"]
        self.assertEqual([(op[1], op[5]) for op in sent], [(2, 4)])   # stage pp - 1 = 2, one FP32 token id


class SlotFifo(unittest.TestCase):
    def test_one_slot_waits_for_the_take(self):
        # one slot: block 1 (ready at tick 1) waits for block 0's take at 10, is taken at max(10 + 1, 10 + 1) = 11
        self.assertEqual(fifo(2, 0, 1, 10, 1, slots=1),
                         {"publish_ticks": [0, 10], "take_ticks": [10, 11], "peak_slots": 1, "last_take_tick": 11})


class SmBalance(unittest.TestCase):
    def test_ratio_to_the_first_supply(self):
        r = budget("sm-balance", "--model", "qwen3-8b", "--supply", "1:1:1", "--supply", "2:2:1")
        first, second = r["rows"][0], r["rows"][1]     # the first tile under each supply
        self.assertEqual((first["bound_ratio_to_first"], second["bound_ratio_to_first"]), (1, "3/4"))
        self.assertEqual(Fraction(second["bound_ratio_to_first"]),
                         Fraction(second["bound_cycles"]) / Fraction(first["bound_cycles"]))


if __name__ == "__main__":
    unittest.main()
