"""`budget packet-reorder`: one message striped over paths, in-order delivery, declared losses resent (the
book's chapter-7 example); expected values derived by hand."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.packet_reorder import packet_reorder  # noqa: E402

G = 10**9
BOOK = dict(payload_bytes=8192, packet_bytes=1024, path_rate=G)   # BF16 [1, 4096] in 8 packets of 1,024 ns each


class PacketReorder(unittest.TestCase):
    def test_balanced_paths(self):
        # Two 1 us paths: packets 2j and 2j+1 both end at 1,024 (j + 1) ns and arrive 1 us later together: in order.
        r = packet_reorder(**BOOK, path_delays_ns=[1000, 1000])
        self.assertEqual((r["first_delivery_ns"], r["completion_ns"], r["peak_retained_bytes"]), ("2024", "5096", 0))

    def test_skewed_path_holds_the_even_packets(self):
        # Each path sends its four packets back to back, ending at 1,024, 2,048, 3,072, 4,096 ns. Path 0 (1 us)
        # delivers 0, 2, 4, 6 at 2,024, 3,048, 4,072, 5,096; path 1 (9 us) delivers 1, 3, 5, 7 at 10,024 ... 13,096.
        # 2, 4 and 6 wait for 1: 3 x 1,024 B held; the last in-order delivery is packet 7 at 13,096 ns.
        r = packet_reorder(**BOOK, path_delays_ns=[1000, 9000])
        self.assertEqual((r["completion_ns"], r["peak_retained_bytes"], r["peak_retained_packets"]), ("13096", 3072, 3))

    def test_lost_first_packet(self):
        # Packet 0 ends at 1,024 and is lost; its resend is ready 20 us later, at 21,024, on the idle path 0: it
        # ends at 22,048 and arrives at 23,048, releasing all 8; meanwhile the other 7 (7,168 B) wait. With a
        # 40 us recovery: 43,048. Resent 1,024 B; a go-back-N from packet 0 would resend all 8,192.
        r = packet_reorder(**BOOK, path_delays_ns=[1000, 9000], lost=(0,), recovery_ns=20000)
        self.assertEqual((r["first_delivery_ns"], r["peak_retained_bytes"], r["retransmitted_bytes"]), ("23048", 7168, 1024))
        self.assertEqual((r["suffix_replay_bytes"], r["sent_bytes"]), (8192, 9216))
        late = packet_reorder(**BOOK, path_delays_ns=[1000, 9000], lost=(0,), recovery_ns=40000)
        self.assertEqual(late["completion_ns"], "43048")

    def test_retained_area(self):
        # Skewed: 1,024 B held over [3,048, 4,072), 2,048 over [4,072, 5,096), 3,072 over [5,096, 10,024); packet 1
        # releases 1, 2 (4, 6 held: 2,048 B until 11,048), packet 3 releases 3, 4 (6 held: 1,024 B until 12,072).
        r = packet_reorder(**BOOK, path_delays_ns=[1000, 9000])
        self.assertEqual(r["retained_area_byte_ns"], str(1024 * 1024 + 2048 * 1024 + 3072 * 4928 + 2048 * 1024 + 1024 * 1024))

    def test_the_index_rows_at_its_sizes(self):
        # The index prints its rows for BF16 [4, 4096] = 32,768 B in 4,096 B packets at 50 GB/s (81.92 ns each):
        # balanced 4 x 81.92 + 1,000 = 33192/25 ns; skewed 4 x 81.92 + 9,000 = 233192/25, packets 2, 4, 6 held
        # (12,288 B); loss: resend ready 81.92 + 20,000, ends 20,163.84, arrives 529096/25; late +20 us.
        kw = dict(payload_bytes=32768, packet_bytes=4096, path_rate=50 * G)
        rows = [(dict(path_delays_ns=[1000, 1000]), ("33192/25", 0, 0)),
                (dict(path_delays_ns=[1000, 9000]), ("233192/25", 12288, 0)),
                (dict(path_delays_ns=[1000, 9000], lost=(0,), recovery_ns=20000), ("529096/25", 28672, 4096)),
                (dict(path_delays_ns=[1000, 9000], lost=(0,), recovery_ns=40000), ("1029096/25", 28672, 4096))]
        for extra, want in rows:
            r = packet_reorder(**kw, **extra)
            self.assertEqual((r["completion_ns"], r["peak_retained_bytes"], r["retransmitted_bytes"]), want, extra)

    def test_errors(self):
        base = ("budget", "packet-reorder", "--model", "qwen3-8b", "--packet-bytes", "1024", "--path-delays", "1us",
                "--path-rate", "1GB/s")
        for extra in (("--lost", "8"), ("--lost", "1,1"), ("--packet-bytes", "1")):
            status, _, err = run_cli(*base, *extra, *(("--tokens", "100") if extra[0] == "--packet-bytes" else ()))
            self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()
