"""An image request sent in blocks over three resources that overlap: one serial uplink, one server
(processing and encoding, preview included) and one serial downlink (the book's chapter-12 image
blocks and preview).

Block i has declared input bytes I_i, output bytes O_i, process time p_i and encode time e_i. After
preparation and connection (t_0), the uplink sends the blocks in order; each arrives a forward delay
f after its serialization:

    upload_i ends  u_i = u_{i-1} + 8 I_i / U  (u_{-1} = t_0),   arrival a_i = u_i + f.

Whole-image mode is a barrier: every block's processing waits for all inputs (release max a_j) and
every final block's download waits for all encodes; independent mode (declared by the caller) lets
block i wait only for its own input and its own encode. The server runs process_i then encode_i in
block order, each starting at max(server free, release); an optional preview after block k's encode
takes its encode time on the server and sends its bytes. The downlink is one non-preemptive FIFO by
release time (the preview first on a tie, then block order), each job 8 bytes / D, arriving a
reverse delay r after its serialization; the final image is usable an assembly time after the last
final block arrives. Exact fractions of the declared figures; no codec, model or network runs.
"""

from fractions import Fraction


def block_schedule(*, blocks, independent, upload_bits_per_s, download_bits_per_s, forward_s, reverse_s,
                   prepare_s=Fraction(0), connection_s=Fraction(0), assembly_s=Fraction(0), preview=None):
    """blocks: [(input bytes, output bytes, process s, encode s)]; preview: (after block k, bytes, encode s)."""
    events = []

    def event(name, resource, start, duration, after):
        events.append({"event": name, "resource": resource, "start_s_exact": str(start),
                       "end_s_exact": str(start + duration), "after": ", ".join(after)})
        return start + duration

    ready = event("connect", "client", event("prepare", "client", Fraction(0), prepare_s, []), connection_s,
                  ["prepare"])
    arrivals, link = [], ready
    for i, (size, *_) in enumerate(blocks):
        link = event(f"upload.{i}", "uplink", link, Fraction(8 * size, upload_bits_per_s),
                     ["connect" if i == 0 else f"upload.{i - 1}"])
        arrivals.append(event(f"input_arrival.{i}", "propagation", link, forward_s, [f"upload.{i}"]))
    server, encoded, preview_ready, previous = ready, [], None, None
    for i, (_, _, process, encode) in enumerate(blocks):
        needed = [i] if independent else range(len(blocks))
        after = [f"input_arrival.{j}" for j in needed] + ([previous] if previous else [])
        server = event(f"process.{i}", "server", max([server] + [arrivals[j] for j in needed]), process, after)
        server = event(f"encode.{i}", "server", server, encode, [f"process.{i}"])
        encoded.append(server)
        previous = f"encode.{i}"
        if preview is not None and preview[0] == i:
            server = preview_ready = event("preview_encode", "server", server, preview[2],
                                           [f"process.{j}" for j in range(i + 1)] + [f"encode.{i}"])
            previous = "preview_encode"
    jobs = [(encoded[i] if independent else max(encoded), 1, i, f"final.{i}", out,
             [f"encode.{i}"] if independent else [f"encode.{j}" for j in range(len(blocks))])
            for i, (_, out, _, _) in enumerate(blocks)]
    if preview is not None:
        jobs.append((preview_ready, 0, 0, "preview", preview[1], ["preview_encode"]))
    link, arrived, last = Fraction(0), {}, None
    for release, _, _, name, size, after in sorted(jobs):
        link = event(f"download.{name}", "downlink", max(link, release), Fraction(8 * size, download_bits_per_s),
                     after + ([last] if last else []))
        last = f"download.{name}"
        arrived[name] = event(f"arrival.{name}", "propagation", link, reverse_s, [last])
    finals = [f"final.{i}" for i in range(len(blocks))]
    complete = event("final_usable", "client", max(arrived[n] for n in finals), assembly_s,
                     [f"arrival.{n}" for n in finals])
    return {
        "events": events,
        "input_bytes": sum(b[0] for b in blocks),
        "final_bytes": sum(b[1] for b in blocks),
        "preview_bytes": preview[1] if preview else 0,
        "complete_s_exact": str(complete),
        "complete_s": float(complete),
        "preview_ready_s_exact": str(arrived["preview"]) if preview else None,
    }


IMAGE_STREAM_CONVENTIONS = [
    "Three resources that overlap: one serial uplink (blocks in order, 8 bytes / upload rate each), one server "
    "(process then encode per block in order, the preview's encode included) and one serial downlink, a "
    "non-preemptive FIFO by release time (the preview first on a tie); a declared forward and reverse delay "
    "follows each serialization without occupying the link. No round trip, loss, flow control or queueing "
    "beyond these.",
    "Whole-image mode is a barrier: processing waits for every input and each final download for every encode; "
    "--independent (the caller's assertion that blocks need no other block) releases block i on its own input "
    "and encode. The preview covers the processed prefix, is not the final image, and adds its bytes. Declared "
    "sizes and times; exact fractions.",
]
