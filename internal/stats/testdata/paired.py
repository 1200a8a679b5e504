#!/usr/bin/python3
"""Writes paired-scipy.json: scipy's answers for the cases of paired-cases.json.

Run with Debian's scipy (apt-get install python3-scipy; /usr/bin/python3),
from this directory:  /usr/bin/python3 paired.py

Each case is base and test figures, one pair a round; the differences tested
are the log ratios ln(test/base), as stats.ComparePaired takes them. The
Wilcoxon p-value is scipy.stats.wilcoxon's (zero_method="wilcox",
correction=False, two-sided) with method "exact" when there are at most 50
differences, none zero and none tied in absolute value, and "approx"
otherwise: scipy 1.10's "auto" would take "exact" with ties too and truncate
W+ to an integer, which is not the exact distribution with ties. The sign
test's is scipy.stats.binomtest(positives, n, 0.5).pvalue, zeros dropped.
The Hodges-Lehmann estimate is the median of the Walsh averages (numpy; no
scipy function gives it), its interval by the exact null distribution of W+
as R's wilcox.test(conf.int=TRUE) takes it.
"""
import json
import math
import sys

import numpy as np
import scipy
from scipy import stats


def signed_rank_pmf(n):
    pmf = np.array([1.0])
    for r in range(1, n + 1):
        nxt = np.zeros(len(pmf) + r)
        nxt[: len(pmf)] += pmf / 2
        nxt[r:] += pmf / 2
        pmf = nxt
    return pmf


def hodges_lehmann(d, confidence=0.95):
    n = len(d)
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    m = len(walsh)
    est = float(np.median(walsh))
    tail = (1 - confidence) / 2
    cdf = np.cumsum(signed_rank_pmf(n))  # cdf[k] = P(W+ <= k)
    k = 0
    for kk in range(1, m + 1):
        if cdf[kk - 1] > tail:
            break
        k = kk
    if k >= 1:
        return est, float(walsh[k - 1]), float(walsh[m - k]), True
    return est, float(walsh[0]), float(walsh[-1]), False


def main():
    cases = json.load(open("paired-cases.json"))
    out = {"scipy": scipy.__version__, "cases": []}
    for c in cases:
        base, test = np.array(c["base"], float), np.array(c["test"], float)
        d = np.log(test / base)
        nz = d[d != 0]
        ties = len(np.unique(np.abs(nz))) < len(nz)
        zeros = bool((d == 0).any())
        method = "exact" if len(nz) <= 50 and not ties and not zeros else "approx"
        w = stats.wilcoxon(d, zero_method="wilcox", correction=False, method=method)
        pos, neg = int((d > 0).sum()), int((d < 0).sum())
        sign_p = stats.binomtest(pos, pos + neg, 0.5).pvalue if pos + neg > 0 else 1.0
        est, lo, hi, bounded = hodges_lehmann(list(d))
        out["cases"].append({
            "name": c["name"],
            "wilcoxon_method": method,
            "wilcoxon_statistic": float(w.statistic),
            "wilcoxon_p": float(w.pvalue),
            "sign_p": float(sign_p),
            "hl_ratio": math.exp(est),
            "hl_lo": math.exp(lo),
            "hl_hi": math.exp(hi),
            "hl_bounded": bounded,
        })
    json.dump(out, open("paired-scipy.json", "w"), indent=1)
    sys.stdout.write("wrote %d cases\n" % len(out["cases"]))


main()
