"""Real-time audio in fixed frames: a model stage and a send link, each serial, then a jitter-buffered
player (the book's chapter-3 audio timing). Every duration is a declared input, in integer ns.

Frame i (i = 0 .. n-1) of length F is captured by (i + 1) F. The model runs frames in order,
the link sends each after its model pass, and each frame arrives a declared delay d_i later (arrivals
may reorder):

    model start s_i = max((i + 1) F, model free),   model end m_i = s_i + model_i,
    send end  e_i = max(m_i, link free) + send,      arrival a_i = e_i + d_i.

Playback starts a jitter buffer J after frame 0 arrives: P = a_0 + J; frame i's fixed deadline is
P + i F. The player plays in order and stalls for a missing frame (never drops it):

    play_i = max(play_{i-1} + F, a_i)  (play_0 = P),   stall_i = play_i - (play_{i-1} + F),
    lateness_i = play_i - (P + i F),   a miss when a_i > P + i F.

The ready queue holds frames arrived but not yet playing (PCM bytes = sample rate x F x channels x
sample bytes each); its peak is over the arrival and play-start events, same-time changes netted.
An interruption at time I mutes at the next device quantum boundary after I + control delay:
mute = ceil((I + c) / q) q; audible after I = the baseline playback inside [I, mute]. No model or
network work is rescheduled or cancelled.
"""

from collections import defaultdict


def _ceil_div(a, b):
    return -(-a // b)


def audio_timing(*, frame_ns, model_ns, network_delay_ns, send_ns, jitter_buffer_ns, sample_rate, channels,
                 sample_bytes, interrupt_ns=None, control_delay_ns=0, device_quantum_ns=1):
    samples, rest = divmod(sample_rate * frame_ns, 10**9)
    if rest:
        raise ValueError(f"a frame of {frame_ns:,} ns holds a fractional number of samples at {sample_rate:,} Hz")
    chunk_bytes = samples * channels * sample_bytes
    rows, model_free, link_free = [], 0, 0
    for i, (model, delay) in enumerate(zip(model_ns, network_delay_ns)):
        start = max((i + 1) * frame_ns, model_free)
        model_free = start + model
        link_free = max(model_free, link_free) + send_ns
        rows.append({"frame": i, "capture_ready_ns": (i + 1) * frame_ns, "model_start_ns": start,
                     "model_end_ns": model_free, "send_end_ns": link_free, "arrival_ns": link_free + delay})
    first = rows[0]["arrival_ns"] + jitter_buffer_ns
    free, queue = first, defaultdict(int)
    for i, r in enumerate(rows):
        deadline = first + i * frame_ns
        play = max(free, r["arrival_ns"])
        r.update(deadline_ns=deadline, deadline_miss=r["arrival_ns"] > deadline, playback_start_ns=play,
                 stall_ns=play - free, lateness_ns=play - deadline)
        free = play + frame_ns
        if play > r["arrival_ns"]:
            queue[r["arrival_ns"]] += chunk_bytes
            queue[play] -= chunk_bytes
    held = peak = 0
    for _, delta in sorted(queue.items()):
        held += delta
        peak = max(peak, held)
    out = {"frames": len(rows), "frame_rate_per_s": 10**9 / frame_ns, "pcm_frame_bytes": chunk_bytes, "source_audio_ns": len(rows) * frame_ns,
           "first_playback_ns": first, "first_capture_to_playback_ns": first - frame_ns,
           "deadline_misses": sum(r["deadline_miss"] for r in rows), "total_stall_ns": sum(r["stall_ns"] for r in rows),
           "max_lateness_ns": max(r["lateness_ns"] for r in rows), "playback_finish_ns": free,
           "ready_queue_peak_bytes": peak}
    if interrupt_ns is not None:
        mute = _ceil_div(interrupt_ns + control_delay_ns, device_quantum_ns) * device_quantum_ns
        out.update(mute_effective_ns=mute, interrupt_to_mute_ns=mute - interrupt_ns,
                   audible_after_interrupt_ns=sum(max(0, min(r["playback_start_ns"] + frame_ns, mute)
                                                      - max(r["playback_start_ns"], interrupt_ns)) for r in rows))
    out["frame_rows"] = rows
    return out


AUDIO_CONVENTIONS = [
    "Frame i is captured by (i + 1) x frame; one model stage and one send link, each serial and in order, may "
    "overlap each other; each frame arrives its declared network delay after its send (arrivals may reorder). "
    "Playback starts the jitter buffer after frame 0 arrives; deadlines are first play + i x frame; the player "
    "plays in order, stalling (never dropping) for a late frame, so later frames shift.",
    "Ready queue = frames arrived and not yet playing, PCM bytes = sample rate x frame x channels x sample bytes "
    "each; its peak nets same-time arrivals and starts. An interruption mutes at the first device-quantum "
    "boundary at or after interrupt + control delay; audible time is the baseline playback before that. No "
    "work is cancelled or rescheduled. Declared times in ns, integers.",
]
