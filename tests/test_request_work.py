"""`budget request` (analyses/request_work.py): one request's stage work, calls and states, each
expected value derived by hand or taken from the book's file named in its comment."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402


def request(model, *args):
    code, out, err = run_cli("budget", "request", "--model", model, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)["result"]


class ByHand(unittest.TestCase):
    def test_one_token_qwen3_8b(self):
        # Qwen3-8B, one input token, one returned: linear weights = 8,190,735,360 parameters less the
        # embedding 151,936 x 4,096 = 622,329,856 and the norms (36 x (2 x 4,096 + 2 x 128) + 4,096 =
        # 308,224) = 7,568,097,280, x 2 FLOPs = 15,136,194,560; attention 1 pair x (2 x 128 QK + 2 x 128
        # PV) x 32 heads x 36 layers = 589,824; total 15,136,784,384 (the book's first-output figure).
        # State: 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 B per position.
        r = request("qwen3-8b", "--input-len", "1", "--output-len", "1")
        self.assertEqual((r["input_matrix_flops"], r["decode_matrix_flops"], r["forward_calls"]), (15136784384, 0, 1))
        self.assertEqual((r["restored_state_bytes"], r["final_state_bytes"], r["retained_positions"]), (0, 147456, 1))
        self.assertEqual(r["uniform_bf16_weight_bytes"], 2 * 8190735360)

    def test_positions_and_states(self):
        # S 125, P 3, G 4: 125 + 3 + 4 - 1 = 131 positions retained, 131 x 147,456 = 19,316,736 B;
        # restored 125 x 147,456 = 18,432,000 B; 1 + 3 calls
        r = request("qwen3-8b", "--prefix-len", "125", "--input-len", "3", "--output-len", "4")
        self.assertEqual((r["retained_positions"], r["final_state_bytes"], r["restored_state_bytes"],
                          r["state_growth_bytes"], r["forward_calls"]), (131, 19316736, 18432000, 884736, 4))
        self.assertEqual(r["request_matrix_flops"], r["input_matrix_flops"] + r["decode_matrix_flops"])

    def test_sequential_input_is_decode_steps(self):
        # with one-token input passes, moving an input token to the decode side changes nothing:
        # both sum the one-token passes at histories S .. S + P + G - 2
        a = request("qwen3-8b", "--prefix-len", "125", "--input-len", "3", "--output-len", "4", "--sequential-input")
        b = request("qwen3-8b", "--prefix-len", "125", "--input-len", "2", "--output-len", "5", "--sequential-input")
        self.assertEqual(a["request_matrix_flops"], b["request_matrix_flops"])
        self.assertEqual((a["input_forward_calls"], a["forward_calls"]), (3, 6))
        # a one-token input pass is the same pass either way
        c = request("qwen3-8b", "--prefix-len", "125", "--input-len", "1", "--output-len", "4")
        d = request("qwen3-8b", "--prefix-len", "125", "--input-len", "1", "--output-len", "4", "--sequential-input")
        self.assertEqual(c["request_matrix_flops"], d["request_matrix_flops"])

    def test_kda_block_work(self):
        # Kimi K3, one token: the recurrence leaves the matrix work, 6 d^2 per head and token = 6 x 128^2
        # x 96 heads x 69 layers = 651,165,696 FLOPs less (the book's first-output 208,364,023,808).
        # Three tokens over 125: the ledger's chunked delta rule per chunk and head exceeds the block
        # algorithm's by the forward substitution C(C-1)(C-2)/3 = 2 and the unit diagonal
        # 2 C (d_k + d_v) = 1,536 at C = 3: 1,538 x 6,624 = 10,187,712.
        for args, less in ((("--input-len", "1", "--output-len", "1"), 651165696),
                           (("--prefix-len", "125", "--input-len", "3", "--output-len", "1"), 10187712)):
            ledger = request("kimi-k3", *args, "--mla", "naive")
            block = request("kimi-k3", *args, "--mla", "naive", "--kda-work", "block")
            self.assertEqual(ledger["request_matrix_flops"] - block["request_matrix_flops"], less)
        self.assertEqual(block["input_matrix_flops"], 622940942336)   # the book's prefix-boundary input stage


class BookFiles(unittest.TestCase):
    def test_whole_request_matrix(self):
        # bojieli/ai-infra-book:calculations/research/request-model-comparison/summary.json, matrix_flops of
        # request-four-models-prefix-boundary and -prefix-6144-2048 (V4: rectangular attention, the known
        # input tokens one at a time; K3: expanded MLA cache, block-wise KDA)
        v4 = ("--attention-count", "rectangular", "--sequential-input")
        k3 = ("--mla", "naive", "--kda-work", "block")
        for model, extra, boundary, long in (("qwen3-8b", (), 88782602240, 37170273714176),
                                             ("deepseek-v4-flash", v4, 164129112064, 60359492108288),
                                             ("kimi-k3", k3, 1248603668480, 446115478999040)):
            r = request(model, "--prefix-len", "125", "--input-len", "3", "--output-len", "4", *extra)
            self.assertEqual(r["request_matrix_flops"], boundary, model)
            r = request(model, "--prefix-len", "6144", "--input-len", "2048", "--output-len", "4", *extra)
            self.assertEqual(r["request_matrix_flops"], long, model)
        self.assertEqual(r["final_state_bytes"], 12538478592)   # K3 after 8,195 positions


if __name__ == "__main__":
    unittest.main()
