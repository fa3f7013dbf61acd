"""Exact one-step RDP of the Poisson-subsampled Gaussian mechanism (add/remove), for
privacy/tests/rdp_exact.rs. Writes rdp_reference.csv beside this file.

Made with mpmath 1.4.1 at 60 significant digits, Python 3:
    python3 -m venv venv && venv/bin/pip install mpmath==1.4.1
    venv/bin/python privacy/tests/data/rdp_reference.py

RDP at order a is ln(A_a)/(a - 1), A_a = E_{z ~ N(0, s^2)} [((1 - q) + q e^{(2z - 1)/(2 s^2)})^a]
(Mironov, Talwar & Zhang 2019, eq. (3)). At integer a the expectation is the finite binomial
sum of their eq. (2), evaluated exactly in 60-digit arithmetic; at fractional a it is adaptive
Gauss-Legendre quadrature split at the integrand's peak (z near a), at 60 digits, and the row
records the quadrature's own error estimate. The integer rows are also integrated, as a check of
the quadrature, and the script stops if the two disagree beyond 1e-25 relatively.
"""
import csv
import os

import mpmath as mp

mp.mp.dps = 60


def log_a_integer(q, s, a):
    q, s = mp.mpf(q), mp.mpf(s)
    return mp.log(
        mp.fsum(
            mp.binomial(a, i) * q**i * (1 - q) ** (a - i) * mp.e ** ((i * i - i) / (2 * s * s))
            for i in range(a + 1)
        )
    )


def log_a_quadrature(q, s, a):
    q, s, a = mp.mpf(q), mp.mpf(s), mp.mpf(a)

    def f(z):
        return mp.npdf(z, 0, s) * ((1 - q) + q * mp.e ** ((2 * z - 1) / (2 * s * s))) ** a

    # The integrand is a mixture of Gaussians in z centred between 0 and a (in units where the
    # shift is 1): split there and at +-12 s around both ends.
    points = sorted({-mp.inf, -12 * s, mp.mpf(0), a / 2, a, a + 12 * s, mp.inf})
    value, error = mp.quad(f, points, error=True, maxdegree=10)
    return mp.log(value), error / value


def main():
    rows = []
    for q in ["0.0001", "0.001", "0.01", "0.25", "0.5", "0.9"]:
        for s in ["0.5", "2/3", "1", "2.722", "5"]:
            sigma = mp.mpf(2) / 3 if s == "2/3" else mp.mpf(s)
            for order in ["1.1", "1.5", "2", "2.5", "4.75", "8", "10.5"]:
                a = mp.mpf(order)
                integer = a == int(a)
                quad, err = log_a_quadrature(mp.mpf(q), sigma, a)
                if integer:
                    exact = log_a_integer(mp.mpf(q), sigma, int(a))
                    if abs(quad - exact) > mp.mpf("1e-25") * abs(exact):
                        raise SystemExit(f"quadrature {quad} vs sum {exact} at {q} {s} {order}")
                    log_a, err = exact, mp.mpf(0)
                else:
                    log_a = quad
                rdp = log_a / (a - 1)
                rows.append((q, s, order, mp.nstr(rdp, 25), mp.nstr(abs(err), 3)))
                print(*rows[-1], flush=True)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rdp_reference.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["q", "sigma", "order", "rdp", "relative_error_estimate"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
