#!/bin/bash
# Runs the benchmark smoke binary briefly and checks it reported a result.
set -euo pipefail
out=$("$1" --benchmark_min_time=0.01 --benchmark_format=csv 2>/dev/null)
echo "$out"
# The CSV row: name,iterations,real_time,cpu_time,time_unit,bytes_per_second,...
row=$(grep '^"BM_SmokeSum/1024"' <<<"$out") || { echo "no BM_SmokeSum/1024 row"; exit 1; }
iterations=$(cut -d, -f2 <<<"$row")
[ "$iterations" -gt 0 ] || { echo "no iterations ran: $row"; exit 1; }
