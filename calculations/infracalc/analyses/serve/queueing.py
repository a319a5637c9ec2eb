"""Load on a serving system: utilisation, Little's law and the queueing delay.

The system is taken as one server whose capacity is mu requests/s (a policy's
steady-state rate), serving requests that arrive as a Poisson stream at rate
lambda. The mean service time is S = 1 / mu and its squared coefficient of
variation c^2 (0 when every request has the same shape: M/D/1). The mean wait
before service, by the Pollaczek-Khinchine formula for the M/G/1 queue
(Kleinrock, Queueing Systems Vol. 1, 1975, eq. 5.105):

    Wq = rho S (1 + c^2) / (2 (1 - rho)),   rho = lambda / mu < 1,

added to the TTFT; Little's law gives the requests in the system,
L = lambda (Wq + the request's time in service). The TTFT limit breaks when
TTFT_service + Wq = limit, i.e. at

    rho* = 2 s / (S (1 + c^2) + 2 s),   s = limit - TTFT_service,   lambda* = rho* mu.

An approximation (a batching engine is not one server with independent service
times): an estimate, never a bound.
"""

QUEUE_CONVENTION = (
    "Queueing (an estimate): Poisson arrivals at --rate into one server of capacity mu (the "
    "policy's requests/s under the estimate), mean service S = 1/mu with squared coefficient of "
    "variation c^2 (--service-cv2, default 0: M/D/1); mean wait Wq = rho S (1 + c^2) / "
    "(2 (1 - rho)), rho = rate / mu (Pollaczek-Khinchine, M/G/1); TTFT under load = TTFT + Wq; "
    "requests in the system L = rate x (Wq + TTFT + (G - 1) TPOT) (Little's law); the TTFT limit "
    "breaks at rate* = mu x 2s / (S (1 + c^2) + 2s), s = limit - TTFT.")


def wait_s(rate, mu, cv2=0.0):
    """Mean queueing delay Wq (None when rate >= mu: the queue grows without bound)."""
    if rate >= mu:
        return None
    rho = rate / mu
    return rho * (1 + cv2) / (2 * mu * (1 - rho))


def breaking_rate(mu, ttft_s, limit_s, cv2=0.0):
    """The arrival rate at which TTFT + Wq reaches `limit_s` (0 when the TTFT alone
    exceeds it)."""
    slack = limit_s - ttft_s
    if slack <= 0:
        return 0.0
    return mu * 2 * slack / ((1 + cv2) / mu + 2 * slack)


def load(rate, mu, ttft_s, in_service_s, cv2=0.0, ttft_limit_s=None):
    """The load record of one policy at `rate` requests/s."""
    wq = wait_s(rate, mu, cv2)
    rec = {"rate_per_s": rate, "capacity_per_s": mu, "utilisation": rate / mu,
           "queue_wait_s": wq, "ttft_under_load_s": None if wq is None else ttft_s + wq,
           "requests_in_system": None if wq is None else rate * (wq + in_service_s),
           "stable": wq is not None}
    if ttft_limit_s is not None:
        rec["ttft_limit_breaks_at_rate_per_s"] = breaking_rate(mu, ttft_s, ttft_limit_s, cv2)
    return rec
