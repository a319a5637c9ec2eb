"""`models` lists from the stored summaries (results/model-summaries.json) only where a
config is unchanged, and the stored summaries equal the computed ones."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)
from infracalc.analyses import models  # noqa: E402
from infracalc.cli.models import STORED_SUMMARIES, _stored_summaries  # noqa: E402
from infracalc.load.models import bundled_ids, config_crc32, load_model  # noqa: E402
from infracalc.paths import data_dir  # noqa: E402


class StoredSummaries(unittest.TestCase):
    def test_stored_summaries_are_the_computed_ones(self):
        """The store equals a fresh computation, config CRCs included (reproduce --check
        diffs the same file; this names the remedy)."""
        fresh = models.summaries(bundled_ids(), load_model, config_crc32)
        stored = _stored_summaries()
        self.assertIsNotNone(stored, f"results/{STORED_SUMMARIES} is missing")
        self.assertEqual(json.dumps(stored, sort_keys=True), json.dumps(fresh, sort_keys=True),
                         f"results/{STORED_SUMMARIES} is stale: run "
                         "`python3 calculations/calc.py reproduce --only model-summaries`")

    def test_listing_from_the_store_equals_the_computed_listing(self):
        ids = bundled_ids()
        self.assertEqual(models.listing(ids, load_model, config_crc32, _stored_summaries()),
                         models.listing(ids, load_model, config_crc32, None))

    def test_a_row_is_read_only_while_its_config_crc_matches(self):
        ids = ["qwen3-8b", "gpt2"]
        fake = {"id": "qwen3-8b", "params": -1}
        stored = {"summaries": {"qwen3-8b": {"config_crc32": config_crc32("qwen3-8b"), "row": fake}}}
        rows = models.listing(ids, load_model, config_crc32, stored)["models"]
        self.assertEqual(rows[0], fake)                                   # unchanged config: stored row
        self.assertEqual(rows[1], models.summary(load_model("gpt2")))     # no entry: computed
        edited = models.listing(ids, load_model, lambda i: config_crc32(i) ^ 1, stored)["models"]
        self.assertEqual(edited[0], models.summary(load_model("qwen3-8b")))   # edited config: computed
        self.assertEqual(edited[0]["params"], 8_190_735_360)

    def test_crc_is_of_the_config_bytes(self):
        import zlib
        with open(os.path.join(data_dir("models"), "gpt2.json"), "rb") as f:
            self.assertEqual(config_crc32("gpt2"), zlib.crc32(f.read()))

    def test_summaries_is_json_only(self):
        status, _, err = run_cli("models", "--summaries")
        self.assertEqual(status, 2)
        self.assertIn("--format json", err)


if __name__ == "__main__":
    unittest.main()
