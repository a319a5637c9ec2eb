"""render.table.to_json writes exactly what json.dumps(indent=2, allow_nan=False,
ensure_ascii=False) writes (plus a newline): on every stored JSON result and on edge cases."""

import collections
import glob
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)
from infracalc.render.table import to_json  # noqa: E402


def reference(value):
    return json.dumps(value, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


class JsonWriter(unittest.TestCase):
    def test_every_stored_json_result(self):
        files = glob.glob(os.path.join(support.CALC, "results", "**", "*.json"), recursive=True)
        self.assertGreater(len(files), 100)
        for path in files:
            with open(path, encoding="utf-8") as f:
                value = json.load(f)
            self.assertEqual(to_json(value), reference(value), path)

    def test_edge_cases(self):
        class Int(int):
            pass

        class Text(str):
            pass

        value = {"": [], "e": {}, "nested": [[], {}, [[1]], {"a": {}}], "t": (1, (2, 3)),
                 1: "int key", 2.5: "float key", True: "bool key", None: "null key",
                 "floats": [0.1, 1e-07, 1e300, -0.0, 3.0, 12345678901234567.0],
                 "ints": [0, -1, 10**30, Int(7), True, False, None],
                 "text": ["\u00b5s", "tab\there", "quote\"back\\slash", "\u2028", "\x00", Text("sub")],
                 "ordered": collections.OrderedDict([("z", 1), ("a", 2)])}
        self.assertEqual(to_json(value), reference(value))
        for top in ([], {}, 1, "x", None, 1.5):
            self.assertEqual(to_json(top), reference(top))

    def test_refusals_as_json(self):
        for bad in (float("nan"), [float("inf")], {"x": -float("inf")}):
            with self.assertRaises(ValueError):
                to_json(bad)
        for bad in ({"x": object()}, {(1, 2): 3}, [{1, 2}]):
            with self.assertRaises(TypeError):
                to_json(bad)


if __name__ == "__main__":
    unittest.main()
