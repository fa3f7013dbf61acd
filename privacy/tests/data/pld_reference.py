"""Reference ε of DP-SGD (Poisson-subsampled Gaussian) from Google's dp-accounting PLD accountant,
for privacy/tests/pld.rs. Writes pld_reference.csv beside this file.

Made with dp-accounting 0.6.0 (PyPI), numpy and scipy as pip resolved them, Python 3:
    python3 -m venv dpvenv && dpvenv/bin/pip install dp-accounting==0.6.0
    dpvenv/bin/python privacy/tests/data/pld_reference.py

Accountant: dp_accounting.pld.PLDAccountant(neighboring_relation, value_discretization_interval=h)
(pessimistic connect-the-dots discretisation, log-mass truncation e^-50, composition by FFT with
tail-mass truncation 1e-15: the library's defaults). h is 1e-4 (the library's default) except
where the composed loss spans hundreds of nats (q = 1 over many steps), where a grid of 1e-4
would hold millions of points; those rows use 1e-3 or 1e-2 and record it. privrl's test runs
its own accountant at the same h.

Rows: kind = grid (one (q, steps) block) or schedule (the blocks of `schedule`, composed in
order; q and steps are then blank and the blocks are in the `schedule` column as
q:steps;q:steps;...). relation = add-remove (ADD_OR_REMOVE_ONE) or substitution (REPLACE_ONE,
the pair (1-q)N(0,σ²) + qN(-1,σ²) against (1-q)N(0,σ²) + qN(1,σ²)).
"""
import csv
import os
import sys
import time

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

NR = dp_accounting.NeighboringRelation
RELATIONS = {"add-remove": NR.ADD_OR_REMOVE_ONE, "substitution": NR.REPLACE_ONE}
DELTA = 1e-5


def interval(q, steps):
    if q == 1.0 and steps >= 1000:
        return 1e-2
    if q == 1.0 and steps >= 100:
        return 1e-3
    return 1e-4


def epsilon(relation, sigma, blocks, h):
    acc = pld_privacy_accountant.PLDAccountant(RELATIONS[relation], value_discretization_interval=h)
    events = [
        dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        for q, steps in blocks
    ]
    acc.compose(dp_event.ComposedDpEvent(events))
    return acc.get_epsilon(DELTA)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pld_reference.csv")
    rows = []
    for relation in RELATIONS:
        for sigma in (0.8, 1.0, 2.0):
            for q in (0.01, 0.1, 1.0):
                for steps in (1, 100, 1000):
                    h = interval(q, steps)
                    t = time.time()
                    e = epsilon(relation, sigma, [(q, steps)], h)
                    print(f"{relation} σ={sigma} q={q} T={steps} h={h}: ε={e!r} "
                          f"({time.time() - t:.1f}s)", file=sys.stderr)
                    rows.append(("grid", relation, sigma, q, steps, "", h, DELTA, e))
        # A heterogeneous schedule, like a replay buffer's growing n_t: q_t = min(1, 8/t).
        schedule = [(1.0, 8), (0.5, 8), (0.25, 16), (0.125, 32), (0.0625, 64), (0.03125, 128)]
        for sigma in (1.0, 2.0):
            h = 1e-4
            t = time.time()
            e = epsilon(relation, sigma, schedule, h)
            print(f"{relation} σ={sigma} schedule: ε={e!r} ({time.time() - t:.1f}s)",
                  file=sys.stderr)
            text = ";".join(f"{q}:{n}" for q, n in schedule)
            rows.append(("schedule", relation, sigma, "", "", text, h, DELTA, e))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "relation", "sigma", "q", "steps", "schedule", "interval", "delta",
                    "epsilon"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], repr(r[8])])


if __name__ == "__main__":
    main()
