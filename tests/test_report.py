"""`report` / --format html: one self-contained page per result, well-formed (checked in every
run with an XML parser), no scripts and nothing fetched; and, where Chromium is installed,
opened headless with no console message and a screenshot in which the charts are drawn."""

import os
import shutil
import struct
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET
import zlib

from support import run_cli

NS = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
BLUE = (0x1f, 0x77, 0xb4)   # the charts' point and bar colour

REPORTS = {   # command line -> charts expected
    "forward": (("forward", "--model", "qwen3-30b-a3b", "--tokens", "2K"), 2),
    "decode": (("decode", "--model", "qwen3-8b", "--input-len", "1K", "--output-len", "1K", "--batch-sweep"), 1),
    "train": (("train", "--model", "llama-3.1-8b", "--devices", "8", "--pp", "2", "--seq", "4K",
               "--global-batch", "64"), 1),
    "kv": (("kv", "--model", "qwen3-8b", "--context", "32K", "--batch", "8", "--pp", "2"), 1),
    "parallel": (("parallel", "--model", "llama-3.1-70b", "--tp", "4", "--pp", "2", "--input-len", "2K",
                  "--output-len", "256", "--batch", "16"), 1),
    "serve": (("serve", "--model", "llama-3.1-8b", "--input-len", "1K", "--output-len", "256",
               "--tpot-limit", "20ms"), 0),
    "models": (("models",), 0),
}


def report(argv):
    status, out, err = run_cli("report", *argv)
    assert status == 0, err
    return out


def parse(html):
    assert html.startswith("<!DOCTYPE html>\n"), html[:40]
    return ET.fromstring(html.split("\n", 1)[1])


class WellFormed(unittest.TestCase):
    def test_every_report_parses_and_is_self_contained(self):
        for name, (argv, charts) in REPORTS.items():
            with self.subTest(name):
                html = report(argv)
                root = parse(html)
                self.assertEqual(len(root.findall(f".//{SVG}svg")), charts)
                self.assertIsNotNone(root.find(f".//{NS}table"))
                self.assertNotIn("<script", html)
                for attr in ("src=", "href="):   # nothing loaded from anywhere
                    self.assertNotIn(attr, html)
                self.assertEqual(report(argv), html)   # deterministic

    def test_verdict_and_full_tables(self):
        html = report(REPORTS["train"][0])
        root = parse(html)
        verdict = root.find(f".//{NS}div[@class='verdict']")
        self.assertIsNotNone(verdict)
        self.assertIn("Fits", "".join(verdict.itertext()))
        self.assertNotIn("[1]", "".join(root.find(f".//{NS}table").itertext()))   # cells in full

    def test_output_extension_and_report_errors(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.html")
            status, _, err = run_cli("kv", "--model", "qwen3-8b", "--context", "1K", "--output", path)
            self.assertEqual(status, 0, err)
            with open(path) as f:
                parse(f.read())
        for argv in (("report",), ("report", "reproduce"), ("report", "nope")):
            status, out, err = run_cli(*argv)
            self.assertEqual((status, out), (2, ""))
            self.assertIn("report COMMAND", err)


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG (no interlace)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows, channels


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@unittest.skipUnless(chromium(), "Chromium is not installed (apt-get install chromium)")
class InABrowser(unittest.TestCase):
    def test_opens_with_no_console_message_and_draws_the_charts(self):
        with tempfile.TemporaryDirectory() as d:
            page, shot = os.path.join(d, "forward.html"), os.path.join(d, "shot.png")
            with open(page, "w", encoding="utf-8") as f:
                f.write(report(REPORTS["forward"][0]))
            p = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                                "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
                                f"--user-data-dir={d}/profile", "--window-size=1200,6000",
                                f"--screenshot={shot}", "file://" + page],
                               capture_output=True, text=True, timeout=120)
            self.assertTrue(os.path.isfile(shot), p.stderr[-2000:])
            console = [line for line in p.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
            self.assertEqual(console, [])
            width, height, rows, channels = png_pixels(shot)
            blue = sum(1 for row in rows for x in range(0, len(row), channels)
                       if tuple(row[x:x + 3]) == BLUE)
            self.assertGreater(blue, 2000, "no chart drawn in the screenshot")   # points and bars


if __name__ == "__main__":
    unittest.main()
