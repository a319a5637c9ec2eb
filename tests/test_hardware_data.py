"""Checks on the accelerator data files in calculations/hardware/.

Stdlib only; reads the JSON files directly (no import of the project package).
Spot values below are re-derived here from the vendor text quoted in each
file's "sources" notes, so a silent edit of a number makes a test fail.
"""

import json
import unittest
from pathlib import Path

HW_DIR = Path(__file__).resolve().parent.parent / "calculations" / "hardware"

REQUIRED_IDS = [
    "a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200", "h20", "b200", "gb200",
    "mi300x", "mi325x", "mi355x", "tpu-v5e", "tpu-v5p", "tpu-v6e",
    "rtx-4090", "rtx-5090", "gaudi3",
]

TOP_KEYS = [
    "id", "name", "vendor", "matrix_flops_per_s", "vector_flops_per_s",
    "memory_bytes", "memory_label_bytes", "memory_bandwidth_bytes_per_s", "scale_up", "scale_out",
    "tdp_watts", "sources",
]
MATRIX_KEYS = ["bf16", "fp16", "fp8", "int8", "fp4"]
VECTOR_KEYS = ["fp32", "bf16"]
SCALE_UP_KEYS = ["name", "bytes_per_s_per_direction", "domain_size"]
SCALE_OUT_KEYS = ["name", "bytes_per_s_per_direction"]
# Optional link fields (absent = not published), in this order after the required ones.
SCALE_UP_OPTIONAL = ["topology", "links_per_device", "bytes_per_s_per_link", "wraparound_axis",
                     "in_network_reduce", "in_network_efficiency", "in_network_alpha_s", "alpha_s"]
SCALE_OUT_OPTIONAL = ["nics_per_device", "alpha_s"]
TOPOLOGIES = {"switch", "mesh", "torus"}
# Non-integer link fields: latencies in seconds and efficiencies (floats), a flag (bool).
FLOAT_FIELDS = {"alpha_s", "in_network_alpha_s", "in_network_efficiency"}
BOOL_FIELDS = {"in_network_reduce"}
# Optional top-level field (absent = unknown), right after scale_out when present.
HOST_LINK = "host_link"
SOURCE_KEYS = ["source", "status", "note"]
STATUSES = {"V", "R", "3P"}
# Fields that may be null (then "sources" must explain why under that key).
NULLABLE = {"scale_out", "tdp_watts"}

GB = 10**9
TERA = 10**12
PETA = 10**15
GIB = 2**30


def load_all():
    records = {}
    for path in sorted(HW_DIR.glob("*.json")):
        records[path.stem] = (path, json.loads(path.read_text(encoding="utf-8")))
    return records


def numeric_leaves(obj, prefix=""):
    """Yield (dotted_path, value) for every non-string leaf outside "sources"."""
    for key, value in obj.items():
        path = f"{prefix}.{key}" if prefix else key
        if not prefix and key == "sources":
            continue
        if isinstance(value, dict):
            yield from numeric_leaves(value, path)
        elif isinstance(value, str):
            continue
        else:
            yield path, value


class HardwareDataTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.records = load_all()

    def rec(self, device_id):
        self.assertIn(device_id, self.records, f"missing {device_id}.json")
        return self.records[device_id][1]

    # ---- structure -------------------------------------------------------

    def test_directory_has_files(self):
        self.assertTrue(HW_DIR.is_dir(), HW_DIR)
        self.assertGreaterEqual(len(self.records), len(REQUIRED_IDS))

    def test_required_ids_present(self):
        missing = [i for i in REQUIRED_IDS if i not in self.records]
        self.assertEqual(missing, [])

    def test_formatting_two_space_indent_trailing_newline(self):
        for stem, (path, data) in self.records.items():
            with self.subTest(device=stem):
                text = path.read_text(encoding="utf-8")
                self.assertTrue(text.endswith("}\n"), "needs one trailing newline")
                self.assertEqual(text, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def test_top_level_keys_in_order_and_id_matches_filename(self):
        for stem, (_, data) in self.records.items():
            with self.subTest(device=stem):
                keys = list(data.keys())
                if HOST_LINK in keys:
                    self.assertEqual(keys.index(HOST_LINK), keys.index("scale_out") + 1)
                    self.assertEqual(list(data[HOST_LINK]), ["name", "bytes_per_s_per_direction"])
                self.assertEqual([k for k in keys if k != HOST_LINK], TOP_KEYS)
                self.assertEqual(data["id"], stem)
                for key in ("name", "vendor"):
                    self.assertIsInstance(data[key], str)
                    self.assertTrue(data[key].strip())

    def test_nested_keys_allowed_and_ordered(self):
        for stem, (_, data) in self.records.items():
            with self.subTest(device=stem):
                matrix = list(data["matrix_flops_per_s"].keys())
                self.assertTrue(matrix, "at least one matrix dtype")
                self.assertEqual(matrix, [k for k in MATRIX_KEYS if k in matrix])
                vector = list(data["vector_flops_per_s"].keys())
                self.assertEqual(vector, [k for k in VECTOR_KEYS if k in vector])
                self.assertIsInstance(data["scale_up"], dict)
                up = list(data["scale_up"].keys())
                self.assertEqual(up[:3], SCALE_UP_KEYS)
                self.assertEqual(up[3:], [k for k in SCALE_UP_OPTIONAL if k in up])
                self.assertIn(data["scale_up"].get("topology", "switch"), TOPOLOGIES)
                if data["scale_out"] is not None:
                    out = list(data["scale_out"].keys())
                    self.assertEqual(out[:2], SCALE_OUT_KEYS)
                    self.assertEqual(out[2:], [k for k in SCALE_OUT_OPTIONAL if k in out])
                for link in ("scale_up", "scale_out"):
                    if data[link] is not None:
                        self.assertTrue(data[link]["name"].strip())

    def test_numeric_fields_are_positive_ints_with_sources(self):
        for stem, (_, data) in self.records.items():
            sources = data["sources"]
            for path, value in numeric_leaves(data):
                with self.subTest(device=stem, field=path):
                    leaf = path.split(".")[-1]
                    if value is None:
                        self.assertTrue(path in NULLABLE or path.startswith("matrix_flops_per_s."),
                                        "only scale_out / tdp_watts / an unpublished peak may be null")
                    elif leaf in BOOL_FIELDS:
                        self.assertIs(type(value), bool)
                    elif leaf in FLOAT_FIELDS:
                        self.assertIs(type(value), float)
                        self.assertTrue(0 < value <= 1, "seconds or an efficiency: in (0, 1]")
                    else:
                        self.assertIs(type(value), int, "must be int (no floats, no bools)")
                        self.assertGreater(value, 0)
                    self.assertIn(path, sources, "every numeric (or null) field needs a sources entry")

    def test_source_entries_well_formed(self):
        for stem, (_, data) in self.records.items():
            for path, entry in data["sources"].items():
                with self.subTest(device=stem, entry=path):
                    self.assertIn(path.split(".")[0], TOP_KEYS[3:-1] + [HOST_LINK], "sources key must name a data field")
                    self.assertEqual(list(entry.keys()), SOURCE_KEYS)
                    self.assertIsInstance(entry["source"], str)
                    self.assertTrue(entry["source"].strip())
                    self.assertIn(entry["status"], STATUSES)
                    self.assertIsInstance(entry["note"], str)

    def test_memory_physical_and_label(self):
        """memory_bytes is what a server can allocate (driver total where published, else the
        label's binary capacity), never below the label read as 10^9 bytes."""
        MIB = 2**20
        want = {"h100-sxm": 81_559 * MIB,        # nvidia-smi: 85,520,809,984 B
                "a100-sxm-80gb": 81_920 * MIB,   # nvidia-smi: exactly 80 GiB
                "b200": 183_359 * MIB,           # nvidia-smi: 192,265,846,784 B
                "h200": 141 * GIB, "mi300x": 192 * GIB, "tpu-v5e": 16 * GIB}
        for stem, value in want.items():
            self.assertEqual(self.records[stem][1]["memory_bytes"], value, stem)
        self.assertEqual(85_520_809_984, 81_559 * MIB)
        for stem, (_, data) in self.records.items():
            with self.subTest(device=stem):
                self.assertGreaterEqual(data["memory_bytes"], data["memory_label_bytes"])
                self.assertLess(data["memory_bytes"], data["memory_label_bytes"] * 1.08)

    def test_plausible_ranges(self):
        for stem, (_, data) in self.records.items():
            with self.subTest(device=stem):
                self.assertTrue(GB <= data["memory_bytes"] <= 1000 * GB)
                self.assertTrue(100 * GB <= data["memory_bandwidth_bytes_per_s"] <= 20 * TERA)
                for value in data["matrix_flops_per_s"].values():
                    self.assertTrue(value is None or 10 * TERA <= value <= 50 * PETA)
                self.assertGreaterEqual(data["scale_up"]["domain_size"], 1)
                if data["tdp_watts"] is not None:
                    self.assertTrue(50 <= data["tdp_watts"] <= 3000)

    # ---- invariants ------------------------------------------------------

    def test_links_times_per_link_match_the_device_figure(self):
        # Switched and mesh parts: links x per-link = the per-direction device figure, exactly.
        # TPUs: the scaling-book's per-link figure (e.g. v5p 9e10 B/s x 6 = 540 GB/s) sits about
        # 10% below Google's halved chip figure (600 GB/s); both are kept (tpus.md).
        for stem, (_, data) in self.records.items():
            up = data["scale_up"]
            if "links_per_device" not in up or "bytes_per_s_per_link" not in up:
                continue
            with self.subTest(device=stem):
                total = up["links_per_device"] * up["bytes_per_s_per_link"]
                if up.get("topology") == "torus":
                    self.assertTrue(0.8 * up["bytes_per_s_per_direction"] <= total <= up["bytes_per_s_per_direction"])
                else:
                    self.assertEqual(total, up["bytes_per_s_per_direction"])

    def test_in_network_reduction_only_on_nvswitch_gen3_and_later(self):
        # NVLS exists on NVSwitch gen 3+ (Hopper on); NCCL's nvlsEfficiency: Hopper 0.85,
        # Blackwell 0.74 (NVIDIA/nccl:src/graph/tuning.cc v2.30.7).
        # H800: the HGX H100's NVSwitch with fewer links; NCCL runs NVLS on it (NVIDIA/nccl-tests
        # issue #153; 215 GB/s busbw on 8 GPUs, NVIDIA/nccl issue #1374, above a ring's 200).
        expect = {"h100-sxm": 0.85, "h200": 0.85, "h20": 0.85, "h800": 0.85, "b200": 0.74, "b300": 0.74,
                  "gb200": 0.74, "gb300": 0.74}
        for stem, (_, data) in self.records.items():
            with self.subTest(device=stem):
                up = data["scale_up"]
                self.assertEqual(up.get("in_network_reduce", False), stem in expect)
                self.assertEqual(up.get("in_network_efficiency"), expect.get(stem))

    def test_lower_precision_not_slower(self):
        for stem, (_, data) in self.records.items():
            m = data["matrix_flops_per_s"]
            with self.subTest(device=stem):
                m = {k: v for k, v in m.items() if v is not None}
                if "fp8" in m and "bf16" in m:
                    self.assertGreaterEqual(m["fp8"], m["bf16"])
                if "fp4" in m and "fp8" in m:
                    self.assertGreaterEqual(m["fp4"], m["fp8"])

    def test_pcie_cards_default_scale_out_is_their_pcie_link(self):
        # No NVLink and no NIC in the product: GPUs of a multi-GPU PCIe server talk over their own
        # PCIe x16 link through the host, the stated default scale-out tier (never faster, so the
        # bound stays a bound; issue 17).
        for stem in ("rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000"):
            with self.subTest(device=stem):
                data = self.rec(stem)
                up, out = data["scale_up"], data["scale_out"]
                self.assertEqual(up["domain_size"], 1)
                self.assertTrue(up["name"].startswith("PCIe") and out["name"].startswith("PCIe"))
                self.assertEqual(out["bytes_per_s_per_direction"], up["bytes_per_s_per_direction"])
                self.assertIn("default", data["sources"]["scale_out.bytes_per_s_per_direction"]["note"])

    def test_h20_is_third_party(self):
        data = self.rec("h20")
        for key in data["matrix_flops_per_s"]:
            entry = data["sources"][f"matrix_flops_per_s.{key}"]
            self.assertEqual(entry["status"], "3P")
            self.assertIn("dense", entry["note"])

    # ---- spot values, re-derived from the vendor text ----------------------

    def test_book_devices(self):
        # Spot values from the vendor text quoted in each file's notes.
        self.assertEqual(self.rec("rtx-3090")["matrix_flops_per_s"]["bf16"], 71_200 * 10**9)
        self.assertEqual(self.rec("rtx-3090")["memory_bandwidth_bytes_per_s"], 936 * GB)
        self.assertEqual(self.rec("v100-sxm2")["matrix_flops_per_s"], {"fp16": 125 * TERA})   # no BF16 on Volta
        self.assertEqual(self.rec("h800")["matrix_flops_per_s"], self.rec("h100-sxm")["matrix_flops_per_s"])
        self.assertEqual(self.rec("h800")["scale_up"]["bytes_per_s_per_direction"], 200 * GB)   # 400 GB/s bidir
        self.assertEqual(self.rec("b300")["matrix_flops_per_s"]["fp4"], 108 * PETA // 8)
        self.assertEqual(self.rec("rtx-pro-6000")["memory_label_bytes"], 96 * GB)
        self.assertEqual(self.rec("rtx-pro-6000")["memory_bytes"], 96 * 2**30)
        self.assertEqual(self.rec("ascend-910c")["sources"]["matrix_flops_per_s.bf16"]["status"], "3P")
        for apple, bw in (("apple-m3-ultra", 819), ("apple-m4-max", 546), ("apple-m2-max", 400), ("apple-m5-ultra", 1200),
                          ("apple-m6", 170)):
            d = self.rec(apple)
            self.assertEqual(d["memory_bandwidth_bytes_per_s"], bw * GB)
            self.assertEqual(set(d["matrix_flops_per_s"].values()), {None})   # not published, not invented
        # RTX PRO 6000 Server Edition page: "Memory Bandwidth 1597 GB/s", "96 GB GDDR7", "Up to 600W"; its
        # "FP16 | BF16 Tensor Core 1 PFLOP" is rounded and dense/sparse unstated: unknown
        d = self.rec("rtx-pro-6000-server")
        self.assertEqual((d["memory_bandwidth_bytes_per_s"], d["memory_label_bytes"], d["tdp_watts"]), (1597 * GB, 96 * GB, 600))
        self.assertEqual(set(d["matrix_flops_per_s"].values()), {None})
        # Atlas 300I A2 product page: "560 TOPS INT8, 280 TFLOPS FP16", "64 GB, 带宽1.6 TB/s", "最大350W"; no BF16 rate
        # Ascend 950 white paper Table 3-1 (via the book's hardware.md) and the Huawei Connect 2025
        # keynote: 950DT 144 GB / 4 TB/s, 950PR 128 GB / 1.6 TB/s; no BF16 peak published, the
        # "1 PFLOPS FP8" is not said to be dense; "2 TB/s" interconnect read as both directions
        for v, gb, bw in (("ascend-950dt", 144, 4000), ("ascend-950pr", 128, 1600)):
            d = self.rec(v)
            self.assertEqual((d["memory_label_bytes"], d["memory_bytes"], d["memory_bandwidth_bytes_per_s"]),
                             (gb * GB, gb * GIB, bw * GB))
            self.assertEqual(d["matrix_flops_per_s"], {"bf16": None, "fp8": None})
            self.assertEqual(d["scale_up"]["bytes_per_s_per_direction"] * 2, 2 * TERA)
        # RTX Blackwell PRO whitepaper Appendix A Table 4 (via the book's hardware.md): RTX A6000 154.8 TF BF16
        # dense (FP32 accumulate), 38.7 TF FP32, 48 GB, 768 GB/s, 300 W; RTX 6000 Ada 364 / 728.5 FP8 / 91.1, 960 GB/s
        for v, bf16, fp32, bw in (("rtx-a6000", 154_800, 38_700, 768), ("rtx-6000-ada", 364_000, 91_100, 960)):
            d = self.rec(v)
            self.assertEqual((d["matrix_flops_per_s"]["bf16"], d["vector_flops_per_s"]["fp32"]), (bf16 * 10**9, fp32 * 10**9))
            self.assertEqual((d["memory_label_bytes"], d["memory_bandwidth_bytes_per_s"], d["tdp_watts"]), (48 * GB, bw * GB, 300))
        self.assertEqual(self.rec("rtx-6000-ada")["matrix_flops_per_s"]["fp8"], 728_500 * 10**9)
        # A100 variants of the book's table: the datasheet's rates (as the 80GB SXM4), 40 GB / 1,555 GB/s / 400 W
        # (Ampere whitepaper Table 4) and 80 GB / 1,935 GB/s / 300 W (A100 page, 80GB PCIe)
        for v, gb, bw, watts in (("a100-sxm-40gb", 40, 1555, 400), ("a100-pcie-80gb", 80, 1935, 300)):
            d = self.rec(v)
            self.assertEqual(d["matrix_flops_per_s"], self.rec("a100-sxm-80gb")["matrix_flops_per_s"])
            self.assertEqual((d["memory_label_bytes"], d["memory_bandwidth_bytes_per_s"], d["tdp_watts"]), (gb * GB, bw * GB, watts))
        d = self.rec("atlas-300i-a2")
        self.assertEqual(d["matrix_flops_per_s"], {"bf16": None, "fp16": 280 * TERA, "int8": 560 * TERA})
        self.assertEqual((d["memory_label_bytes"], d["memory_bandwidth_bytes_per_s"], d["tdp_watts"]),
                         (64 * GB, 1600 * GB, 350))

    def test_h100_sxm_dense_is_half_of_datasheet_sparse(self):
        d = self.rec("h100-sxm")
        m = d["matrix_flops_per_s"]
        # Datasheet: BF16/FP16 1,979 TFLOPS and FP8/INT8 3,958 "with sparsity".
        self.assertEqual(m["bf16"], 1979 * TERA // 2)       # 989.5 TFLOPS
        self.assertEqual(m["fp16"], 1979 * TERA // 2)
        self.assertEqual(m["fp8"], 3958 * TERA // 2)        # 1,979 TFLOPS
        self.assertEqual(m["int8"], 3958 * TERA // 2)
        self.assertNotIn("fp4", m)
        self.assertEqual(d["vector_flops_per_s"]["fp32"], 67 * TERA)
        self.assertEqual(d["memory_label_bytes"], 80 * GB)
        self.assertEqual(d["memory_bandwidth_bytes_per_s"], 3350 * GB)
        # "900 GB/s NVLink" counts both directions.
        self.assertEqual(d["scale_up"]["bytes_per_s_per_direction"], 900 * GB // 2)
        self.assertEqual(d["scale_up"]["domain_size"], 8)
        self.assertEqual(d["scale_out"]["bytes_per_s_per_direction"], 400 * GB // 8)
        self.assertEqual(d["tdp_watts"], 700)

    def test_h200_same_compute_more_memory(self):
        h100, h200 = self.rec("h100-sxm"), self.rec("h200")
        self.assertEqual(h200["matrix_flops_per_s"], h100["matrix_flops_per_s"])
        self.assertEqual(h200["memory_label_bytes"], 141 * GB)
        self.assertEqual(h200["memory_bandwidth_bytes_per_s"], 4800 * GB)

    def test_a100(self):
        d = self.rec("a100-sxm-80gb")
        self.assertEqual(d["matrix_flops_per_s"]["bf16"], 624 * TERA // 2)
        self.assertNotIn("fp8", d["matrix_flops_per_s"])
        self.assertEqual(d["memory_bandwidth_bytes_per_s"], 2039 * GB)
        self.assertEqual(d["scale_up"]["bytes_per_s_per_direction"], 600 * GB // 2)

    def test_h100_pcie(self):
        d = self.rec("h100-pcie")
        self.assertEqual(d["matrix_flops_per_s"]["bf16"], 1513 * TERA // 2)
        self.assertEqual(d["matrix_flops_per_s"]["fp8"], 3026 * TERA // 2)
        self.assertEqual(d["tdp_watts"], 350)
        self.assertTrue(d["scale_up"]["name"].startswith("PCIe Gen5"))

    def test_b200_from_hgx_per_8_gpu_figures(self):
        d = self.rec("b200")
        m = d["matrix_flops_per_s"]
        self.assertEqual(m["fp4"], 144 * PETA // 8 // 2)    # 144 PF sparse per HGX
        self.assertEqual(m["fp8"], 72 * PETA // 8 // 2)
        self.assertEqual(m["bf16"], 36 * PETA // 8 // 2)
        self.assertEqual(d["memory_label_bytes"], 1440 * GB // 8)  # 180 GB usable
        self.assertEqual(d["scale_up"]["bytes_per_s_per_direction"], 1800 * GB // 2)

    def test_gb200_from_nvl72_rack_figures(self):
        d = self.rec("gb200")
        m = d["matrix_flops_per_s"]
        self.assertEqual(m["fp4"], 1440 * PETA // 72 // 2)  # 1,440 PF sparse per rack
        self.assertEqual(m["fp8"], 720 * PETA // 72 // 2)
        self.assertEqual(d["vector_flops_per_s"]["fp32"], 5760 * TERA // 72)
        self.assertEqual(d["memory_label_bytes"], 372 * GB // 2)
        self.assertEqual(d["scale_up"]["domain_size"], 72)

    def test_tpus_from_google_docs(self):
        v5e, v5p, v6e = self.rec("tpu-v5e"), self.rec("tpu-v5p"), self.rec("tpu-v6e")
        self.assertEqual(v5e["matrix_flops_per_s"]["bf16"], 197 * TERA)
        self.assertEqual(v5e["matrix_flops_per_s"]["int8"], 393 * TERA)
        self.assertEqual(v5e["memory_label_bytes"], 16 * GB)
        self.assertEqual(v5e["scale_up"]["bytes_per_s_per_direction"], 400 * GB // 2)
        self.assertEqual(v5e["scale_up"]["domain_size"], 256)
        self.assertEqual(v5e["scale_out"]["bytes_per_s_per_direction"], 2 * 100 * GB // 8 // 8)
        self.assertEqual(v5p["matrix_flops_per_s"]["bf16"], 459 * TERA)
        self.assertEqual(v5p["memory_label_bytes"], 95 * GIB)      # docs state GiB
        self.assertEqual(v5p["memory_bandwidth_bytes_per_s"], 2765 * GB)
        self.assertEqual(v5p["scale_up"]["bytes_per_s_per_direction"], 1200 * GB // 2)
        self.assertEqual(v5p["scale_up"]["domain_size"], 8960)
        self.assertEqual(v6e["matrix_flops_per_s"]["bf16"], 918 * TERA)
        self.assertEqual(v6e["matrix_flops_per_s"]["int8"], 1836 * TERA)
        self.assertEqual(v6e["memory_bandwidth_bytes_per_s"], 1638 * GB)
        self.assertEqual(v6e["scale_up"]["bytes_per_s_per_direction"], 800 * GB // 2)
        self.assertEqual(v6e["scale_up"]["domain_size"], 256)

    def test_amd(self):
        mi300x, mi355x = self.rec("mi300x"), self.rec("mi355x")
        self.assertEqual(mi300x["matrix_flops_per_s"]["bf16"], 13074 * TERA // 10)
        self.assertEqual(mi300x["matrix_flops_per_s"]["fp8"], 26149 * TERA // 10)
        self.assertEqual(mi300x["memory_label_bytes"], 192 * GB)
        self.assertEqual(mi300x["scale_up"]["bytes_per_s_per_direction"], 7 * 128 * GB // 2)
        # MI355X: 256 CUs x 16,384 dense MXFP4 FLOP/clk/CU x 2.4 GHz; AMD's
        # "20.1 PF" is the with-sparsity figure, exactly twice this.
        fp4 = mi355x["matrix_flops_per_s"]["fp4"]
        self.assertEqual(fp4, 256 * 16384 * 2_400_000_000)
        self.assertEqual(round(2 * fp4 / (100 * TERA)), 201)
        self.assertEqual(mi355x["matrix_flops_per_s"]["fp8"], fp4 // 2)
        self.assertEqual(mi355x["memory_label_bytes"], 288 * GB)
        self.assertEqual(mi355x["tdp_watts"], 1400)

    def test_gaudi3(self):
        d = self.rec("gaudi3")
        self.assertEqual(d["matrix_flops_per_s"], {"bf16": 1835 * TERA, "fp8": 1835 * TERA})
        self.assertEqual(d["vector_flops_per_s"], {"bf16": 287 * TERA // 10})
        self.assertEqual(d["memory_label_bytes"], 128 * GB)
        self.assertEqual(d["scale_up"]["bytes_per_s_per_direction"], 21 * 200 * GB // 8)
        self.assertEqual(d["scale_out"]["bytes_per_s_per_direction"], 3 * 200 * GB // 8)

    def test_rtx_fp32_accumulate_rates(self):
        r4090, r5090 = self.rec("rtx-4090"), self.rec("rtx-5090")
        self.assertEqual(r4090["matrix_flops_per_s"]["bf16"], 1652 * TERA // 10)
        self.assertEqual(r4090["matrix_flops_per_s"]["fp8"], 3303 * TERA // 10)
        self.assertEqual(r4090["memory_bandwidth_bytes_per_s"], 1008 * GB)
        self.assertEqual(r5090["matrix_flops_per_s"]["fp4"], 3352 * TERA // 2)
        self.assertEqual(r5090["memory_bandwidth_bytes_per_s"], 1792 * GB)


class HardwareCsvUnknownVersusAbsent(unittest.TestCase):
    def test_unknown_peak_is_not_an_absent_format(self):
        # Apple publishes no FLOP/s for the M3 Ultra's bf16 (it has bf16: null, unknown) and
        # it has no fp8 at all; the TPU v5e has int8 (393e12) and no fp16. Markdown prints
        # `unknown` and `-`; the CSV must keep the two apart as well.
        import csv
        import io
        from support import run_cli
        code, out, _ = run_cli("hardware", "--device", "apple-m3-ultra", "--device", "tpu-v5e",
                               "--format", "csv")
        self.assertEqual(code, 0)
        rows = {r["id"]: r for r in csv.DictReader(io.StringIO(out))}
        apple, tpu = rows["apple-m3-ultra"], rows["tpu-v5e"]
        self.assertEqual((apple["bf16_flops_per_s"], apple["fp8_flops_per_s"]), ("unknown", ""))
        self.assertEqual(apple["bf16_ridge_point_flops_per_byte"], "unknown")
        self.assertEqual((tpu["int8_flops_per_s"], tpu["fp16_flops_per_s"]), ("393000000000000", ""))


if __name__ == "__main__":
    unittest.main()
