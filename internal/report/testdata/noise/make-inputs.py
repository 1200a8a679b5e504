#!/usr/bin/python3
"""Writes the inputs of TestNoiseVerdicts (internal/report/noise_test.go).

real-cpu-ab.json is recorded: one real experiment on this project's 2-core
VM, shared with other sessions at the time (2026-12-02), made with

    loadlab run ab.yaml --out /tmp/b26/ab     (plan in real-cpu-ab.json's "plan")

and read back from its experiment.json and runs/NNN/result.json:
    python3 make-inputs.py /tmp/b26/ab
The others are made here from a seeded generator, each modelled on a case
issue 26 reports: a CPU hog that comes and goes by round, CPU steal under an
A/B on memory or on throughput, a machine-wide drift of +17% across the
rounds, and a round whose run failed.
"""
import json
import math
import os
import random
import sys

MIB = 1 << 20


def run_of(point, rep, rps, p95, rss=40.0, pss=19.0, codes=(), status="done"):
    return {"point": point, "rep": rep, "status": status, "throughput": round(rps, 3), "p50": round(p95 / 2, 4), "p95": round(p95, 4),
            "p99": round(p95 * 1.5, 4), "cpu": 90.0, "rss_peak": rss, "rss_avg": round(rss * 0.95, 3), "pss_peak": pss,
            "pss_avg": round(pss * 0.95, 3), "validity": list(codes)}


def recorded(d):
    e = json.load(open(os.path.join(d, "experiment.json")))
    runs = []
    for r in e["runs"]:
        x = json.load(open(os.path.join(d, r["dir"], "result.json")))
        s, srv = x["summary"], x["server"]
        tp = s["window_responses"] / s["window_s"] if s.get("window_s") else s["throughput_rps"]
        lat = s["latency_ms"]
        runs.append({"point": r["point"], "rep": r["rep"], "status": r["status"], "throughput": tp, "p50": lat["p50"], "p95": lat["p95"],
                     "p99": lat["p99"], "cpu": srv["cpu_avg_pct"], "rss_peak": srv["rss_peak_bytes"] / MIB, "rss_avg": srv["rss_avg_bytes"] / MIB,
                     "pss_peak": srv["pss_peak_bytes"] / MIB, "pss_avg": srv["pss_avg_bytes"] / MIB,
                     "validity": sorted({w["code"] for w in x.get("validity") or []})})
    return {"about": "recorded: loadlab target at --cpu 1ms against 1.08ms (p50 +7.4% by construction), 8 rounds, on a shared 2-core VM",
            "params": e["params"], "vary": e["vary"], "repeat": e["repeat"], "seed": e["seed"], "plan": open("/tmp/b26/ab.yaml").read(), "runs": runs}


def order(points, repeat, seed):
    rng = random.Random(seed)
    out = []
    for rep in range(1, repeat + 1):
        ps = list(points)
        rng.shuffle(ps)
        out += [(p, rep) for p in ps]
    return out


def ab(name, about, values, repeat, seed, make):
    params = [{"name": name, "values": values, "numeric": False, "baseline": values[0]}]
    rng = random.Random(seed)
    runs = [make(rng, p, rep, f"{name}={p}") for p, rep in order(values, repeat, seed)]
    return {"about": about, "params": params, "vary": "one-at-a-time", "repeat": repeat, "seed": seed, "runs": runs}


def main():
    if len(sys.argv) > 1:
        json.dump(recorded(sys.argv[1]), open("real-cpu-ab.json", "w"), indent=1)
    hog = [1, 0.62, 1, 0.7, 0.58, 1, 0.93, 0.6]

    def hogged(rng, p, rep, key):
        h = hog[rep - 1]
        rps = 1000 * h * (0.926 if p == "slower" else 1) * (1 + 0.01 * rng.gauss(0, 1))
        return run_of(key, rep, rps, 2000 / rps, codes=["machine_busy"] if h < 0.9 else [])
    inputs = {"hog-ab": ab("cpu", "a -7.4% change beside a CPU hog that is on in some rounds (machine_busy in those runs), 8 rounds", ["base", "slower"], 8, 1, hogged)}

    def memory(rng, p, rep, key):
        rps = 200 * (1 + 0.02 * rng.gauss(0, 1))
        pss = (600 if p == "jemalloc" else 900) * (1 + 0.01 * rng.gauss(0, 1))
        return run_of(key, rep, rps, 20, rss=pss * 1.6, pss=pss, codes=["cpu_steal"] if rng.random() < 0.45 else [])
    inputs["steal-memory-ab"] = ab("allocator", "glibc against jemalloc, 5 rounds (unpaired), cpu_steal in some runs: the verdict rests on memory", ["glibc", "jemalloc"], 5, 2, memory)

    def throughput(rng, p, rep, key):
        rps = 200 * (1.15 if p == "puma" else 1) * (1 + 0.02 * rng.gauss(0, 1))
        return run_of(key, rep, rps, 4000 / rps, codes=["cpu_steal"] if rng.random() < 0.45 else [])
    inputs["steal-throughput-ab"] = ab("server", "thin against puma, 5 rounds (unpaired), cpu_steal in some runs: the verdict rests on throughput", ["thin", "puma"], 5, 2, throughput)

    wobble = [1, -1, 1, -1, 0, 1]
    level = {"thin": 500, "puma": 520, "falcon": 480}

    def drifting(rng, p, rep, key):
        i = list(level).index(p)
        rps = level[p] * (1 + 0.17 * (rep - 1) / 5) * (1 + 0.05 * wobble[(rep + i) % 6])
        return run_of(key, rep, rps, 5000 / rps)
    inputs["machine-drift"] = ab("server", "three servers, 6 rounds, the rounds' level rising 17% from first to last; no point alone rising run after run", list(level), 6, 4, drifting)

    def failing(rng, p, rep, key):
        rps = 500 * (1.05 if p == "b" else 1) * (1 + 0.01 * rng.gauss(0, 1))
        if p == "b" and rep == 3:
            return {"point": key, "rep": rep, "status": "failed", "error": "server did not start"}
        return run_of(key, rep, rps, 2000 / rps)
    inputs["failed-round"] = ab("build", "a +5% change over 7 rounds, one run failed (round 3): the round is left out of the pairing and named", ["a", "b"], 7, 5, failing)
    for name, v in inputs.items():
        json.dump(v, open(name + ".json", "w"), indent=1)


main()
