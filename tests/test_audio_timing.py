"""`budget audio`: real-time audio frames through a model, a link and a jitter-buffered player; every
expected value derived by hand in its comment."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.audio_timing import audio_timing  # noqa: E402

MS = 10**6
BOOK = ("--frame", "20ms", "--network-delays", "5ms,5ms,50ms,5ms,5ms,5ms,5ms,5ms", "--send-time", "1ms",
        "--sample-rate", "24000", "--control-delay", "5ms", "--device-quantum", "10ms")


def budget(*argv):
    return budget_result("audio", *BOOK, *argv)


def three(model_ms, delays_ms, jitter_ms):
    # Frames of 10 ms, 1 ms send, 8 kHz mono 16-bit: 80 samples = 160 B per frame.
    return audio_timing(frame_ns=10 * MS, model_ns=[m * MS for m in model_ms], network_delay_ns=[d * MS for d in delays_ms],
                        send_ns=MS, jitter_buffer_ns=jitter_ms * MS, sample_rate=8000, channels=1, sample_bytes=2)


class Pipeline(unittest.TestCase):
    def test_model_waits_for_capture_and_itself(self):
        # 15 ms model per 10 ms frame: frame 0 runs 10-25, frame 1 waits for the model: 25-40, frame 2 40-55;
        # sends end 26, 41, 56; zero delay: arrivals 26, 41, 56.
        rows = three([15, 15, 15], [0, 0, 0], 0)["frame_rows"]
        self.assertEqual([r["model_start_ns"] // MS for r in rows], [10, 25, 40])
        self.assertEqual([r["arrival_ns"] // MS for r in rows], [26, 41, 56])

    def test_link_is_serial(self):
        # A 12 ms send per 10 ms frame, 5 ms model: frame 0 model 10-15, sent 15-27; frame 1 model 20-25 waits for
        # the link: 27-39; frame 2 model 30-35, link 39-51.
        r = audio_timing(frame_ns=10 * MS, model_ns=[5 * MS] * 3, network_delay_ns=[0] * 3, send_ns=12 * MS,
                         jitter_buffer_ns=0, sample_rate=8000, channels=1, sample_bytes=2)
        self.assertEqual([x["send_end_ns"] // MS for x in r["frame_rows"]], [27, 39, 51])

    def test_player_stalls_in_order_and_shifts(self):
        # 5 ms model: arrivals 10+5+1 = 16, 26 + 30 = 56 (a 30 ms delay), 36; jitter 10: play 26, deadline 36,
        # frame 1 late -> plays at 56 (stall 56 - 36 = 20, a miss), frame 2 arrived at 36 waits for 66 (deadline 46,
        # lateness 20, not a miss): finish 76. Ready queue: frame 2 alone from 36 to 66 -> 160 B.
        r = three([5, 5, 5], [0, 30, 0], 10)
        self.assertEqual([x["playback_start_ns"] // MS for x in r["frame_rows"]], [26, 56, 66])
        self.assertEqual((r["deadline_misses"], r["total_stall_ns"], r["max_lateness_ns"]), (1, 20 * MS, 20 * MS))
        self.assertEqual((r["playback_finish_ns"], r["ready_queue_peak_bytes"], r["pcm_frame_bytes"]), (76 * MS, 160, 160))

    def test_queue_nets_same_time_changes(self):
        # No delays and no jitter: every frame plays when it arrives (16, 26, 36), nothing waits: peak 0.
        self.assertEqual(three([5, 5, 5], [0, 0, 0], 0)["ready_queue_peak_bytes"], 0)

    def test_fractional_samples_refused(self):
        with self.assertRaises(ValueError):
            audio_timing(frame_ns=MS // 3, model_ns=[1], network_delay_ns=[0], send_ns=0, jitter_buffer_ns=0,
                         sample_rate=8000, channels=1, sample_bytes=2)


class Book(unittest.TestCase):
    def test_base_and_interrupt(self):
        # 12 ms model: frame 0 20-32, sent 33, arrives 38; play 38 + 40 = 78. Frame 2 arrives 73 + 50 = 123 > its
        # deadline 118: a 5 ms stall. 960 B per frame (24000 x 0.02 x 2). Interrupt 123 + 5 = 128 -> next 10 ms
        # boundary 130: 7 ms to mute, all of it audible (frame 2 plays from 123).
        r = budget("--model-times", "12ms", "--jitter-buffer", "40ms", "--interrupt", "123ms")
        self.assertEqual((r["first_playback_ns"], r["total_stall_ns"], r["pcm_frame_bytes"]), (78 * MS, 5 * MS, 960))
        self.assertEqual((r["mute_effective_ns"], r["interrupt_to_mute_ns"], r["audible_after_interrupt_ns"]),
                         (130 * MS, 7 * MS, 7 * MS))
        # Frames 3, 4, 5 wait together at 138 (before 3 starts at 143): 3 x 960 B.
        self.assertEqual(r["ready_queue_peak_bytes"], 2880)

    def test_bad_input(self):
        for argv, text in ((["--model-times", "1ms,2ms"], "one per frame"), (["--model-times", "1ms", "--frame", "1.5ns"],
                                                                             "whole number of nanoseconds")):
            status, _, err = run_cli("budget", "audio", *BOOK, *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()
