#!/usr/bin/env bash
# make bench-server: os-placement, the floor and the peer policies served by the
# real policy-server (one worker, plain HTTP on 127.0.0.1), loaded with wrk at a
# fixed concurrency on the same AdmissionReviews. Prints a table (throughput,
# its ratio to the floor's, p50 and p99 latency) and writes it as JSON.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
kubewarden="${KUBEWARDEN_BIN:-$root/../shared/kubewarden}"
peers="${PEERS:-$root/../shared/bench/peers}"
wasm="${WASM:-$root/target/wasm32-wasip1/release/os_placement_policy.wasm}"
floor="${FLOOR:-$root/target/wasm32-wasip1/release/os_placement_bench_floor.wasm}"
bench="${BENCH:-$root/target/release/os-placement-bench}"
connections="${CONNECTIONS:-4}"
duration="${DURATION:-5s}"
rounds="${ROUNDS:-3}"
cases="${CASES:-a b c d f g}"
out="${JSON:-$root/target/bench/server.json}"

for tool in "$kubewarden/kwctl" "$kubewarden/policy-server"; do
  [ -x "$tool" ] || { echo "bench-server: $tool not found: set KUBEWARDEN_BIN to the directory holding kwctl and policy-server" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "bench-server: wrk not found: make bench-deps installs it (Debian package wrk)" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
api_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$api_pid" ]; then kill "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

kwctl() { HOME="$work" XDG_CACHE_HOME="$work/cache" "$kubewarden/kwctl" "$@" 2>>"$work/kwctl.log"; }

# Annotated modules, each with its own metadata (policy-server refuses others).
kwctl annotate "$wasm" -m "$root/metadata.yml" -u "$root/README.md" -o "$work/os-placement.wasm"
kwctl annotate "$floor" -m "$root/bench/floor/metadata.yml" -o "$work/floor.wasm"
policies=(floor os-placement)
for peer in "$peers"/*.wasm; do
  [ -e "$peer" ] || continue
  name="$(basename "$peer" .wasm)"; name="${name%-policy}"
  kwctl annotate "$peer" -m "${peer%.wasm}.metadata.yml" -o "$work/$name.wasm"
  policies+=("$name")
done

settings="$(sed -e 's/#.*//' "$root/examples/settings/eks.yaml" | awk 'NF' | sed 's/^/    /')"
{
  for p in "${policies[@]}"; do
    echo "$p:"
    echo "  module: file://$work/$p.wasm"
    echo "  allowedToMutate: true"
    if [ "$p" = os-placement ]; then
      echo "  settings:"; echo "$settings"
      # The grants of deploy/: what the EKS settings read is answered.
      echo "  contextAwareResources:"
      echo "    - {apiVersion: v1, kind: ConfigMap}"
      echo "    - {apiVersion: node.k8s.io/v1, kind: RuntimeClass}"
      echo "  hostCapabilities: ['kubernetes/*']"
    else echo "  settings: {}"; fi
  done
} > "$work/policies.yml"

"$bench" --write-reviews "$work/reviews" >/dev/null

# The fake Kubernetes API (an empty cluster): policy-server answers the
# calls os-placement makes, as in a cluster with nothing published yet.
fake_api="${FAKE_API:-$root/target/release/os-placement-fake-api}"
mkfifo "$work/api-stdin"
"$fake_api" "$work/kubeconfig" <"$work/api-stdin" >"$work/api.log" 2>&1 &
api_pid=$!
exec 3>"$work/api-stdin"
for _ in $(seq 1 100); do [ -s "$work/kubeconfig" ] && break; sleep 0.1; done
[ -s "$work/kubeconfig" ] || { echo "bench-server: the fake API did not start" >&2; cat "$work/api.log" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
port="$(free_port)"; probe="$(free_port)"
mkdir -p "$work/downloads"
HOME="$work" XDG_CACHE_HOME="$work/cache" KUBECONFIG="$work/kubeconfig" "$kubewarden/policy-server" \
  --policies "$work/policies.yml" --addr 127.0.0.1 --port "$port" --readiness-probe-port "$probe" \
  --policies-download-dir "$work/downloads" --workers 1 --log-level error --log-no-color \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:$probe/readiness" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$probe/readiness" >/dev/null || { echo "bench-server: policy-server not ready" >&2; tail -20 "$work/server.log" >&2; exit 1; }

cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("REVIEW"), "rb"))
wrk.body = f:read("*a")
f:close()
LUA

# wrk latency ("812.00us", "1.20ms", "2.00s") in µs.
to_us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000; else if (v ~ /s$/) m = 1e6; else m = 1; printf "%.1f", n * m }'; }

machine="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) CPUs"
echo "machine: $machine"
echo "policy-server $("$kubewarden/policy-server" --version 2>/dev/null | head -n 1), 1 worker; wrk -t1 -c$connections -d$duration, $rounds rounds interleaved, median round"
printf '\n%-8s %-18s %10s %8s %10s %10s %s\n' case policy "req/s" "x floor" "p50 µs" "p99 µs" "answer"
results="$work/results.txt"; : > "$results"
for case in $cases; do
  review="$work/reviews/$case.json"
  [ -f "$review" ] || { echo "bench-server: no review for case $case" >&2; exit 1; }
  for round in $(seq 1 "$rounds"); do
    for p in "${policies[@]}"; do
      report="$(REVIEW="$review" wrk -t1 -c"$connections" -d"$duration" --latency -s "$work/post.lua" "http://127.0.0.1:$port/validate/$p")"
      if grep -q "Non-2xx" <<<"$report"; then echo "bench-server: $p answered errors on case $case:" >&2; echo "$report" >&2; exit 1; fi
      rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$report")"
      p50="$(to_us "$(awk '$1 == "50%" {print $2}' <<<"$report")")"
      p99="$(to_us "$(awk '$1 == "99%" {print $2}' <<<"$report")")"
      echo "$case $p $round $rps $p50 $p99" >> "$results"
    done
  done
  for p in "${policies[@]}"; do
    answer="$(curl -s -X POST -H 'Content-Type: application/json' --data-binary @"$review" "http://127.0.0.1:$port/validate/$p" \
      | grep -o '"allowed":[a-z]*\|"patchType":"JSONPatch"' | tr '\n' ' ')"
    echo "$case $p answer $answer" >> "$results"
  done
done

# Median round per (case, policy), ratio to the floor's median round.
awk -v out="$out" -v machine="$machine" -v conns="$connections" -v dur="$duration" '
  $3 == "answer" { a = $0; sub(/^[^ ]+ [^ ]+ answer ?/, "", a); answer[$1 " " $2] = a; next }
  { k = $1 " " $2; n[k]++; rps[k, n[k]] = $4; p50[k, n[k]] = $5; p99[k, n[k]] = $6; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
  END {
    for (i = 1; i <= m; i++) {
      k = order[i]; c = n[k]
      for (x = 1; x <= c; x++) idx[x] = x
      for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (rps[k, idx[y]] < rps[k, idx[x]]) { t = idx[x]; idx[x] = idx[y]; idx[y] = t }
      mid = idx[int((c + 1) / 2)]
      R[k] = rps[k, mid]; P50[k] = p50[k, mid]; P99[k] = p99[k, mid]
    }
    printf "{\"machine\": \"%s\", \"connections\": %s, \"duration\": \"%s\", \"results\": [", machine, conns, dur > out
    for (i = 1; i <= m; i++) {
      k = order[i]; split(k, kp, " "); f = R[kp[1] " floor"]
      printf "%-8s %-18s %10.0f %7.2fx %10.1f %10.1f %s\n", kp[1], kp[2], R[k], R[k] / f, P50[k], P99[k], answer[k]
      printf "%s{\"case\": \"%s\", \"policy\": \"%s\", \"requests_per_s\": %s, \"ratio_to_floor\": %.3f, \"p50_us\": %s, \"p99_us\": %s}", (i > 1 ? ", " : ""), kp[1], kp[2], R[k], R[k] / f, P50[k], P99[k] > out
    }
    print "]}" > out
  }' "$results"
echo "JSON: $out"
