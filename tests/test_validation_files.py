"""Schema checks on the validation corpus in calculations/validation/.

Every published measurement is one case file `<id>.json` (schema v1, documented
in calculations/validation/SOURCES.md). A malformed case must fail here, before
`validate` tries to compute a bound for it: missing or unknown keys, a unit or
scenario outside the allowed lists, a model or device the project cannot
resolve, a format the device has no peak for, or a model config beside the case
that is not valid JSON.
"""

import json
import numbers
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import ROOT  # noqa: E402  (puts calculations/ on the import path)
from infracalc.dtypes import DTYPES  # noqa: E402
from infracalc.load.hardware import device_ids, load_device  # noqa: E402
from infracalc.load.models import bundled_ids  # noqa: E402

VALIDATION_DIR = os.path.join(ROOT, "calculations", "validation")
CONFIG_SUFFIX = ".config.json"

CASE_KEYS = {"id", "kind", "source", "setup", "measured", "assumptions", "exemption"}
SOURCE_KEYS = {"title", "publisher", "url_or_ref", "locator", "version_or_date"}   # publisher: who measured and published it
COMMON_SETUP = {"model", "device", "devices", "weight_dtype", "act_dtype", "batch_or_load", "scenario"}
# Required setup keys and allowed scenarios / units per kind. Serving cases follow schema v1;
# training-step cases are checked against train's lower bound (SOURCES.md).
KINDS = {
    "serving-throughput": (COMMON_SETUP | {"kv_dtype", "input_len", "output_len"},
                           {"offline", "server", "single-stream"},
                           {"output_tokens_per_s", "total_tokens_per_s", "requests_per_s"}),
    "serving-latency": (COMMON_SETUP | {"kv_dtype", "input_len", "output_len"},
                        {"offline", "server", "single-stream"},
                        {"ttft_s", "tpot_s"}),
    "training-step": (COMMON_SETUP | {"layout", "global_batch", "micro_batch", "seq_len"},
                      {"training"},
                      {"step_time_s", "tokens_per_s_per_device", "megatron_eq3_flops_per_s_per_device"}),
    # published collective measurements (nccl-tests, DeepEP) against comm.lower_bound_s; no model
    "collective": ({"device", "devices", "ranks_per_node", "operation", "bytes", "batch_or_load", "scenario"},
                   {"nccl-tests", "deepep"}, {"time_us", "busbw_GB_per_s"}),
}
SETUP_OPTIONAL = {"layout", "reserve_bytes", "routing", "mla",   # see SOURCES.md
                  "optimizer", "master_bytes", "grad_bytes", "link_bw_out_bytes_per_s", "recompute",
                  "nccl_algo", "overlap_ep", "overlap_tp", "ep_dispatcher", "requests"}
DEVICE_AXES = {"tp", "pp", "cp", "dp"}        # their product is the number of devices used
LAYOUT_KEYS = DEVICE_AXES | {"ep", "vp"}      # ep splits experts within dp; vp splits a pipeline stage

def case_files():
    return sorted(f for f in os.listdir(VALIDATION_DIR)
                  if f.endswith(".json") and not f.endswith(CONFIG_SUFFIX))


def load_case(name):
    with open(os.path.join(VALIDATION_DIR, name)) as f:
        return json.load(f)


def positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def text(value):
    return isinstance(value, str) and value.strip() != ""


class CaseSchema(unittest.TestCase):
    """Each case file, checked key by key; subTest names the file that fails."""

    @classmethod
    def setUpClass(cls):
        cls.cases = {name: load_case(name) for name in case_files()}
        cls.models = set(bundled_ids())
        cls.devices = set(device_ids())

    def test_keys_and_id(self):
        for name, case in self.cases.items():
            with self.subTest(case=name):
                self.assertEqual(set(case), CASE_KEYS)
                self.assertEqual(case["id"], name[:-len(".json")])
                self.assertIn(case["kind"], KINDS)
                self.assertEqual(set(case["source"]), SOURCE_KEYS)
                for key in SOURCE_KEYS:
                    self.assertTrue(text(case["source"][key]), key)

    def test_requests_is_the_published_count(self):
        # setup.requests is the count batch_or_load quotes from the source ("all 3000 requests
        # queued at once", "500 requests", "3,000 samples", "samples_per_query 28802"): every number
        # the text gives for it agrees; a serving case that states a count has the field, and an
        # open-ended load (MLPerf Server: Poisson arrivals for a duration) has none.
        import re
        pats = (r"all (\d[\d,]*) requests queued", r"(\d[\d,]*) requests, offered load", r"(?<![\d.])(\d[\d,]*) samples(?!/)",
                r"samples_per_query (\d+)")
        stated = 0
        for name, case in self.cases.items():
            if case["kind"] != "serving-throughput":
                continue
            load = case["setup"]["batch_or_load"]
            counts = {int(m.group(1).replace(",", "")) for p in pats for m in re.finditer(p, load)}
            with self.subTest(case=name):
                if counts:
                    self.assertEqual(counts, {case["setup"]["requests"]})
                    stated += 1
                else:
                    self.assertNotIn("requests", case["setup"])
                    self.assertIn("Poisson arrivals", load)
        self.assertGreaterEqual(stated, 198)

    def test_setup(self):
        for name, case in self.cases.items():
            setup = case["setup"]
            required, scenarios, _ = KINDS[case["kind"]]
            with self.subTest(case=name):
                self.assertTrue(required <= set(setup), required - set(setup))
                self.assertTrue(set(setup) <= required | SETUP_OPTIONAL,
                                set(setup) - required - SETUP_OPTIONAL)
                for key in ("devices", "input_len", "output_len", "global_batch", "micro_batch", "seq_len",
                            "ranks_per_node", "bytes"):
                    if key in required:
                        self.assertTrue(positive_int(setup[key]), key)
                self.assertIn(setup["scenario"], scenarios)
                self.assertTrue(text(setup["batch_or_load"]))
                for key in ("weight_dtype", "act_dtype", "kv_dtype"):
                    if key in required:
                        self.assertIn(setup[key], DTYPES, key)
                layout = setup.get("layout")
                if layout is not None:
                    self.assertTrue(set(layout) <= LAYOUT_KEYS, set(layout) - LAYOUT_KEYS)
                    used = 1
                    for axis, degree in layout.items():
                        self.assertTrue(positive_int(degree), axis)
                        used *= degree if axis in DEVICE_AXES else 1
                    self.assertLessEqual(used, setup["devices"])
                    if "dp" in layout:
                        self.assertEqual(used, setup["devices"], "tp x pp x cp x dp = devices")
                if setup["devices"] > 1 and case["kind"] != "collective":
                    self.assertIsNotNone(layout, "a multi-device case gives its layout")
                if case["kind"] == "collective":
                    self.assertEqual(setup["devices"] % setup["ranks_per_node"], 0)

    def test_measured_assumptions_exemption(self):
        for name, case in self.cases.items():
            with self.subTest(case=name):
                measured = case["measured"]
                self.assertEqual(set(measured), {"value", "unit"})
                self.assertIn(measured["unit"], KINDS[case["kind"]][2])
                value = measured["value"]
                self.assertTrue(isinstance(value, numbers.Real) and not isinstance(value, bool))
                self.assertGreater(value, 0)
                self.assertIsInstance(case["assumptions"], list)
                for item in case["assumptions"]:
                    self.assertTrue(text(item))
                exemption = case["exemption"]
                if exemption is not None:
                    self.assertEqual(set(exemption), {"reason"})
                    self.assertTrue(text(exemption["reason"]))

    def test_model_and_device_resolve(self):
        for name, case in self.cases.items():
            setup = case["setup"]
            with self.subTest(case=name):
                self.assertIn(setup["device"], self.devices)
                if case["kind"] == "collective":
                    continue
                model = setup["model"]
                if model.endswith(CONFIG_SUFFIX):
                    path = os.path.join(VALIDATION_DIR, model)
                    self.assertTrue(os.path.isfile(path), f"{model} is not beside the case")
                else:
                    self.assertIn(model, self.models)
                self.assertIn(setup["device"], self.devices)

    def test_device_has_the_compute_format(self):
        """The activation format is the compute format: the device must publish its peak."""
        loaded = {}
        for name, case in self.cases.items():
            setup = case["setup"]
            if case["kind"] == "collective":
                continue
            with self.subTest(case=name):
                device = loaded.get(setup["device"]) or load_device(setup["device"])
                loaded[setup["device"]] = device
                self.assertGreater(device.peak(DTYPES[setup["act_dtype"]]), 0)


class CorpusShape(unittest.TestCase):

    def test_configs_beside_cases_are_valid_json(self):
        for name in sorted(os.listdir(VALIDATION_DIR)):
            if name.endswith(CONFIG_SUFFIX):
                with self.subTest(config=name), open(os.path.join(VALIDATION_DIR, name)) as f:
                    self.assertIsInstance(json.load(f), dict)

    def test_no_stray_files(self):
        for name in os.listdir(VALIDATION_DIR):
            with self.subTest(file=name):
                self.assertTrue(name.endswith(".json") or name == "SOURCES.md")

    def test_thirty_single_device_serving_cases_from_two_publishers(self):
        """Issue 10: at least 30 single-device serving cases from at least two independent
        sources. Two documents of one vendor are one voice, so sources are counted by
        publisher (the organisation that measured and published the figure), not by URL."""
        single = [c for c in map(load_case, case_files())
                  if c["kind"].startswith("serving") and c["setup"]["devices"] == 1]
        self.assertGreaterEqual(len(single), 30)
        self.assertGreaterEqual(len({c["source"]["publisher"] for c in single}), 2)

    def test_single_device_serving_spans_lengths_formats_and_devices(self):
        """Issue 10: the single-device serving cases span decode-heavy and prefill-heavy
        lengths (here: output at least 10x the input, and input at least 10x the output), and
        include FP8 and FP4 weights on H100, H200 and B200."""
        single = [c["setup"] for c in map(load_case, case_files())
                  if c["kind"].startswith("serving") and c["setup"]["devices"] == 1]
        self.assertTrue(any(s["output_len"] >= 10 * s["input_len"] for s in single))
        self.assertTrue(any(s["input_len"] >= 10 * s["output_len"] for s in single))
        have = {(s["device"], s["weight_dtype"]) for s in single}
        for pair in (("h100-sxm", "fp8"), ("h200", "fp8"), ("b200", "nvfp4")):
            self.assertIn(pair, have)
        self.assertTrue({"fp8", "nvfp4"} <= {w for _, w in have})

    def test_every_source_is_listed_in_sources_md(self):
        with open(os.path.join(VALIDATION_DIR, "SOURCES.md")) as f:
            listed = f.read()
        for name in case_files():
            ref = load_case(name)["source"]["url_or_ref"]
            with self.subTest(case=name):
                first = ref.split(" ")[0]
                self.assertTrue(first in listed, f"{first} is not in SOURCES.md")


    def test_training_layouts_multiply_out_and_their_ga_checks(self):
        """A training case's layout covers its devices (tp x pp x cp x dp), and where the case states
        the published GA ('(GA n)' in batch_or_load, the Megatron Bridge rows), n = GBS / (dp x MBS):
        a row whose printed GA contradicts its GBS is left out of the corpus (SOURCES.md), never added."""
        import re
        checked = 0
        for name in case_files():
            case = load_case(name)
            if case["kind"] != "training-step":
                continue
            s = case["setup"]
            lay = s["layout"]
            with self.subTest(case=name):
                self.assertEqual(lay.get("tp", 1) * lay.get("pp", 1) * lay.get("cp", 1) * lay["dp"], s["devices"])
                m = re.search(r"\(GA (\d+)\)", s["batch_or_load"])
                if m:
                    checked += 1
                    self.assertEqual(s["global_batch"] % (lay["dp"] * s["micro_batch"]), 0)
                    self.assertEqual(int(m.group(1)), s["global_batch"] // (lay["dp"] * s["micro_batch"]))
        self.assertGreaterEqual(checked, 50)   # the Megatron Bridge 25.11 and 26.02 rows

    def test_collective_cases_from_nccl_tests_and_deepep(self):
        """Issue 17: the collectives family holds published nccl-tests runs (one node and across
        nodes) and DeepEP's all-to-all table, from more than one publisher."""
        cases = [c for c in map(load_case, case_files()) if c["kind"] == "collective"]
        self.assertGreaterEqual(len(cases), 21)
        self.assertEqual({c["setup"]["scenario"] for c in cases}, {"nccl-tests", "deepep"})
        self.assertTrue(any(c["setup"]["devices"] > c["setup"]["ranks_per_node"] > 1 for c in cases))
        self.assertGreaterEqual(len({c["source"]["publisher"] for c in cases}), 3)


if __name__ == "__main__":
    unittest.main()
