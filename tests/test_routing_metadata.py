"""`budget routing-metadata`: routed expert ids and declared replay fields; values derived by hand."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)


def meta(model="qwen3-30b-a3b", *extra):
    status, out, err = run_cli("budget", "routing-metadata", "--model", model, "--tokens", "8192", "--token-rate", "1M",
                               "--bandwidth", "1GB/s", *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class RoutingMetadata(unittest.TestCase):
    def test_qwen3_30b_by_hand(self):
        # 8192 tokens x 48 MoE layers x top-8 = 3,145,728 uint16 ids = 6,291,456 B; + 128 header + 8192 x 24 identity
        # (196,608) + 8192 / 8 = 1,024 validity bytes = 6,489,216 B; per token 6,489,216 / 8192 = 50697/64, at 10^6
        # tokens/s 792,140,625 B/s < 10^9: slack; one payload 6,489,216 / 10^9 = 50697/7812500 s
        r = meta()
        self.assertEqual((r["id_entries"], r["routed_id_bytes"], r["payload_bytes"]), (3145728, 6291456, 6489216))
        self.assertEqual((r["bytes_per_token_exact"], r["required_bytes_per_s_exact"]), ("50697/64", "792140625"))
        self.assertEqual((r["transport_has_slack"], r["one_payload_s_exact"]), (True, "50697/7812500"))
        self.assertEqual(r["minimum_bits_per_id"], 7)   # ids 0..127

    def test_copies_multiply_storage_only(self):
        r = meta("qwen3-30b-a3b", "--retained-copies", "3")
        self.assertEqual((r["retained_bytes"], r["required_bytes_per_s_exact"]), (3 * 6489216, "792140625"))

    def test_equal_bandwidth_has_no_slack(self):
        status, out, err = run_cli("budget", "routing-metadata", "--model", "qwen3-30b-a3b", "--tokens", "8192",
                                   "--token-rate", "1M", "--bandwidth", "792140625", "--format", "json")
        self.assertFalse(json.loads(out)["result"]["transport_has_slack"])

    def test_geometry_of_other_models(self):
        # Kimi K3: 92 MoE layers (its first layer dense) x top-16: 8192 x 92 x 16 x 2 = 24,117,248 B, 1.52 GB/s > 1 GB/s
        r = meta("kimi-k3")
        self.assertEqual((r["moe_layers"], r["dense_layers"], r["routed_id_bytes"], r["transport_has_slack"]),
                         (92, 1, 24117248, False))
        # DeepSeek-V4-Flash: 43 MoE layers including its 3 hash-routed ones, top-6
        r = meta("deepseek-v4-flash")
        self.assertEqual((r["moe_layers"], r["hash_routed_layers"], r["routed_id_bytes"]), (43, 3, 8192 * 43 * 6 * 2))

    def test_encoding_must_hold_every_id(self):
        # 384 experts: ids up to 383 do not fit uint8
        status, _, err = run_cli("budget", "routing-metadata", "--model", "deepseek-v4-pro", "--tokens", "8192",
                                 "--token-rate", "1M", "--bandwidth", "1GB/s", "--encoding", "uint8")
        self.assertEqual(status, 2)
        self.assertIn("uint16 or int32", err)
        r = meta("qwen3-30b-a3b", "--encoding", "int32")
        self.assertEqual((r["routed_id_bytes"], r["payload_bytes"]), (12582912, 12780672))


if __name__ == "__main__":
    unittest.main()
