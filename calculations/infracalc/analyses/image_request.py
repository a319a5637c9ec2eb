"""A remote image request as a serial timeline of declared stages (the book's chapter-12 figure 12-1).

The client sends an input file of S_in bytes at an upload rate U bits/s and receives a final image of
S_out bytes at a download rate D bits/s. Every other stage is a declared time; the stages run one
after another (the server waits for the whole input, the download follows the final encode):

    preparation, [extra compression e], connection c, request round trip r, upload 8 S / U, queue,
    input decode, [extra decompression d], model, final encode, download 8 S_out / D, output use;
    complete  T = the sum;   with a reused connection  T - c (the round trip stays).

A compressed variant sends S' <= S_in bytes and adds e + d of codec time (same quality is the
caller's assertion). Against a declared local time L covering the same boundary, the remote request
wins strictly when T < L, i.e. when the upload rate exceeds

    U* = 8 S / (L - (T - 8 S / U))        (no finite rate wins when L <= T - 8 S / U);

compression saves 8 (S_in - S') / U - (e + d), positive strictly below U = 8 (S_in - S') / (e + d).
Every figure is an exact fraction of the declared inputs; nothing is measured.
"""

from fractions import Fraction

STAGES = ("input_preparation", "extra_input_compression", "connection", "request_round_trip", "upload", "queue",
          "input_decode", "extra_input_decompression", "model", "final_image_encode", "download", "output_use")


def transfer_s(size_bytes, bits_per_s):
    """Serialization time of a file: 8 bytes / rate."""
    return Fraction(8 * size_bytes) / bits_per_s


def serial_timeline(durations):
    """[(stage, start, duration, end)] for stages run one after another from 0."""
    out, t = [], Fraction(0)
    for stage, d in durations:
        out.append((stage, t, d, t + d))
        t += d
    return out


def upload_break_even(upload_s, total_s, local_s, payload_bytes):
    """U* = 8 S / (L - fixed), fixed = the timeline without its upload; None when no finite rate wins."""
    available = local_s - (total_s - upload_s)
    return Fraction(8 * payload_bytes) / available if available > 0 else None


def _variant(name, payload, extra_encode, extra_decode, *, output_bytes, upload_bits_per_s, download_bits_per_s,
             times, local_s):
    up = transfer_s(payload, upload_bits_per_s)
    durations = dict(times, extra_input_compression=extra_encode, extra_input_decompression=extra_decode, upload=up,
                     download=transfer_s(output_bytes, download_bits_per_s))
    timeline = serial_timeline((s, durations[s]) for s in STAGES)
    total = timeline[-1][3]
    row = {"variant": name, "transmitted_input_bytes": payload, "complete_s_exact": str(total),
           "complete_s": float(total), "reused_connection_s_exact": str(total - times["connection"])}
    if local_s is not None:
        threshold = upload_break_even(up, total, local_s, payload)
        row.update(remote_strictly_faster=total < local_s,
                   remote_faster_above_bits_per_s_exact=None if threshold is None else str(threshold))
    return row, timeline


def image_request(*, input_bytes, output_bytes, upload_bits_per_s, download_bits_per_s, times, local_s=None,
                  compressed=None):
    """times: the declared seconds of preparation, connection, request_round_trip, queue, input_decode, model,
    final_image_encode, output_use (Fractions); compressed: (bytes, extra encode s, extra decode s) or None."""
    common = dict(output_bytes=output_bytes, upload_bits_per_s=upload_bits_per_s,
                  download_bits_per_s=download_bits_per_s, times=times, local_s=local_s)
    variants = [("original", input_bytes, Fraction(0), Fraction(0))]
    if compressed is not None:
        variants.append(("compressed",) + tuple(compressed))
    rows, timelines = zip(*(_variant(*v, **common) for v in variants))
    stages = []
    for i, stage in enumerate(STAGES):
        entry = {"stage": stage}
        for (name, *_), timeline in zip(variants, timelines):
            entry[f"{name}_s_exact"] = str(timeline[i][2])
            entry[f"{name}_end_s_exact"] = str(timeline[i][3])
        stages.append(entry)
    out = {"stages": stages, "variants": list(rows)}
    if compressed is not None:
        saved = input_bytes - compressed[0]
        codec = compressed[1] + compressed[2]
        saving = transfer_s(saved, upload_bits_per_s) - codec
        out["compression"] = {
            "saved_input_bytes": saved, "extra_codec_s_exact": str(codec), "saving_s_exact": str(saving),
            "compressed_strictly_faster": saving > 0,
            "compressed_faster_below_bits_per_s_exact": str(Fraction(8 * saved) / codec) if codec and saved else None}
    return out


IMAGE_REQUEST_CONVENTIONS = [
    "Serial stages: preparation, extra compression, connection, request round trip (charged once), upload 8 x "
    "input bytes / upload bits/s, queue, input decode, extra decompression, model, final encode, download 8 x "
    "output bytes / download bits/s, output use; the server waits for the whole input and no stage overlaps "
    "another (no chunking or preview). Complete = the sum; a reused connection removes only the connection term.",
    "Against a declared local time L of the same boundary the remote request wins strictly above an upload rate "
    "8 S / (L - the other stages); compression saves 8 (S - S') / U - codec time, positive strictly below "
    "8 (S - S') / codec time. File sizes and times are declared; exact fractions, nothing measured.",
]
