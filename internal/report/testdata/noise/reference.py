#!/usr/bin/python3
"""Writes scipy.json: scipy's paired p-value of every figure at every point
of the experiments here, which TestNoiseVerdicts checks loadlab's against.

Run with Debian's scipy (/usr/bin/python3 reference.py, in this directory).
Pairing as loadlab's: the complete rounds (every point's run done), each
point against the baseline within a round, the log ratio of the figure.
Under 6 rounds the sign test (scipy.stats.binomtest), from 6 the Wilcoxon
signed-rank test (scipy.stats.wilcoxon, zero_method="wilcox",
correction=False; method "exact" with at most 50 differences, none zero or
tied, "approx" otherwise). A figure of 0 in some round has no ratio: left
out.
"""
import glob
import json

import numpy as np
from scipy import stats

FIGURES = {"throughput": "throughput", "p50": "p50", "p95": "p95", "p99": "p99", "cpu": "cpu",
           "rss_peak": "rss_peak", "rss_avg": "rss_avg", "pss_peak": "pss_peak", "pss_avg": "pss_avg"}

out = {}
for f in sorted(glob.glob("*.json")):
    if f == "scipy.json":
        continue
    e = json.load(open(f))
    base = "%s=%s" % (e["params"][0]["name"], e["params"][0]["baseline"])
    points = ["%s=%s" % (e["params"][0]["name"], v) for v in e["params"][0]["values"]]
    by = {}
    for r in e["runs"]:
        by.setdefault(r["rep"], {})[r["point"]] = r if r["status"] == "done" else None
    rounds = sorted(k for k, v in by.items() if all(v.get(p) for p in points))
    res = {}
    for fig, field in FIGURES.items():
        for p in points:
            if p == base:
                continue
            b = np.array([by[k][base][field] for k in rounds], float)
            t = np.array([by[k][p][field] for k in rounds], float)
            if (b <= 0).any() or (t <= 0).any():
                continue
            d = np.log(t / b)
            if (d == 0).all():
                continue
            nz = d[d != 0]
            if len(rounds) < 6:
                pos, neg = int((d > 0).sum()), int((d < 0).sum())
                pv, method = stats.binomtest(pos, pos + neg, 0.5).pvalue, "sign"
            else:
                ties = len(np.unique(np.abs(nz))) < len(nz)
                m = "exact" if len(nz) <= 50 and not ties and len(nz) == len(d) else "approx"
                pv, method = stats.wilcoxon(d, zero_method="wilcox", correction=False, method=m).pvalue, "wilcoxon/" + m
            res.setdefault(fig, {})[p] = {"p": float(pv), "method": method}
    out[f[:-5]] = res
json.dump(out, open("scipy.json", "w"), indent=1, sort_keys=True)
