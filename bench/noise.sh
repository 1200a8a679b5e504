#!/usr/bin/env bash
# noise.sh: the controlled test of issue 26's claim that paired rounds and
# duets find a small change on a noisy machine, and A/A finds none.
#
# Three CPU-bound servers on loopback: `loadlab target --cpu 1ms --workers 1`
# (A), `--cpu 1.08ms --workers 1` (B: -7.4% throughput by construction, if
# the burn is all of a request's cost) and a second copy of A (A2), so that
# A/A compares two server processes as A/B does. --pin same (the default)
# puts the three servers on CPU 0, --pin split A on CPU 0 and B and A2 on
# CPU 1, --pin none leaves them to the scheduler; loadlab is not pinned. Beside them, a CPU hog that
# switches on and off at random, each phase 0.5-4 s, for the whole script
# and no longer (HOG=0 leaves it out). Then N times each:
#   paired   loadlab ab A B --rounds R       (its experiment.json holds the
#                                             paired and the unpaired analysis
#                                             of the same runs)
#   duet     loadlab ab --duet A B --rounds R
#   aa       loadlab ab A A2 --rounds R      (A/A paired, and unpaired)
#   aaduet   loadlab ab --duet A A2 --rounds R
# and prints, per kind, how many of the N found a significant throughput
# change, the median estimate, and how many were headed NOT TRUSTED.
#
# Usage (from the project root):
#   bench/noise.sh [-n N] [-r ROUNDS] [-d RUN] [-c CONNS] [--hog-procs K] [--pin same|split|none] [--only duet|paired]
#   defaults: -n 10 -r 8 -d 1s -c 4, one hog process; LOADLAB=path uses that binary
#   --only duet runs only the duets (A/B and A/A), --only paired only the rounds
#   KEEP=1 keeps the work directory (the experiments' results).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

n=10 rounds=8 dur=1s conns=4 hogprocs=1 pin=same only=all
while (($#)); do
  case $1 in
    -n) n=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -d) dur=$2; shift 2 ;;
    -c) conns=$2; shift 2 ;;
    --hog-procs) hogprocs=$2; shift 2 ;;
    --pin) pin=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [-n N] [-r ROUNDS] [-d RUN] [-c CONNS] [--hog-procs K]" >&2; exit 2 ;;
  esac
done
command -v jq >/dev/null || { echo "noise.sh needs jq" >&2; exit 1; }
work=$(mktemp -d /tmp/loadlab-noise.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
bench_loadlab
portA=18371 portB=18372 portA2=18373
cpuA=() cpuB=()
case $pin in
  same) cpuA=(taskset -c 0) cpuB=(taskset -c 0) ;;
  split) cpuA=(taskset -c 0) cpuB=(taskset -c 1) ;;
  none) ;;
  *) echo "--pin same, split or none" >&2; exit 2 ;;
esac
"${cpuA[@]}" "$LOADLAB" target --addr 127.0.0.1:$portA --cpu 1ms --workers 1 >"$work/a.log" 2>&1 &
pids+=($!)
"${cpuB[@]}" "$LOADLAB" target --addr 127.0.0.1:$portB --cpu 1.08ms --workers 1 >"$work/b.log" 2>&1 &
pids+=($!)
"${cpuB[@]}" "$LOADLAB" target --addr 127.0.0.1:$portA2 --cpu 1ms --workers 1 >"$work/a2.log" 2>&1 &
pids+=($!)
A=http://127.0.0.1:$portA/ B=http://127.0.0.1:$portB/ A2=http://127.0.0.1:$portA2/
for u in $A $B $A2; do
  for _ in $(seq 50); do curl -fs "${u}health" >/dev/null && break; sleep 0.1; done
done

# The hog: K busy processes, on and off at random (0.5-4 s each phase),
# bounded by the script's life (killed at exit) and by a hard limit of 2 h.
phase() { printf '%d.%03d' $((RANDOM % 4)) $((RANDOM % 1000)) | awk '{ p = $1; if (p < 0.5) p += 0.5; if (p > 4) p = 4; print p }'; }
hog() {
  local end=$((SECONDS + 7200))
  while ((SECONDS < end)); do
    local on; on=$(phase)
    for _ in $(seq "$hogprocs"); do timeout "$on" sh -c 'while :; do :; done' & done
    wait
    sleep "$(phase)"
  done
}
if [[ ${HOG:-1} != 0 ]]; then
  hog &
  pids+=($!)
fi

ab() { "$LOADLAB" ab "$@" -c "$conns" -d "$dur" --rounds "$rounds" --fresh >/dev/null 2>>"$work/stderr.log" || true; }
start=$SECONDS
for i in $(seq "$n"); do
  if [[ $only != duet ]]; then
    ab "$A" "$B" --out "$work/paired-$i"
    ab "$A" "$A2" --out "$work/aa-$i"
  fi
  if [[ $only != paired ]]; then
    ab --duet "$A" "$B" --out "$work/duet-$i"
    ab --duet "$A" "$A2" --out "$work/aaduet-$i"
  fi
  echo "experiment $i of $n done ($((SECONDS - start)) s)" >&2
done

# One line per kind: found (significant), of N; the median estimate; headed NOT TRUSTED.
row() { # kind analysis jq-filter-of-change files...
  local kind=$1 analysis=$2 filter=$3; shift 3
  [[ -f $1 ]] || return 0
  jq -s -r --arg k "$kind" --arg a "$analysis" '
    [ .[] | '"$filter"' ] as $c
    | ($c | map(select(.sig)) | length) as $found
    | ($c | map(.delta) | sort) as $d
    | ($d | if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2] else (.[length / 2 - 1] + .[length / 2]) / 2 end) as $med
    | ($c | map(select(.untrusted)) | length) as $nt
    | "\($k)\t\($a)\t\($found) of \($c | length)\t\(if $med == null then "-" else ($med * 1000 | round / 10 | tostring) + "%" end)\t\($nt)\t\($d | map(. * 1000 | round / 10) | tostring)"' "$@"
}
changeOf='(.verdict.figures[] | select(.id == "throughput") | .rows[] | select(.point == "side=B")) as $r | (.verdict.trust.untrusted // false) as $u'
paired="$changeOf"' | {sig: ($r.paired.status == "significant"), delta: $r.paired.delta, untrusted: $u}'
unpaired="$changeOf"' | {sig: ($r.unpaired.status == "significant"), delta: $r.unpaired.delta, untrusted: $u}'
duet='{sig: .throughput.significant, delta: (.throughput.ratio - 1), untrusted: (.alike | not)}'
printf 'kind\tanalysis\tsignificant\tmedian change\tNOT TRUSTED\tchanges (%%)\n'
row "A/B" paired "$paired" "$work"/paired-*/experiment.json
row "A/B" unpaired "$unpaired" "$work"/paired-*/experiment.json
row "A/B" duet "$duet" "$work"/duet-*/duet.json
row "A/A" paired "$paired" "$work"/aa-*/experiment.json
row "A/A" unpaired "$unpaired" "$work"/aa-*/experiment.json
row "A/A" duet "$duet" "$work"/aaduet-*/duet.json
echo "($n experiments of each kind, $rounds rounds of $dur runs, -c $conns, hog ${HOG:-1}x$hogprocs, --pin $pin, --only $only; $((SECONDS - start)) s; duet NOT TRUSTED is NOT ALIKE)"
