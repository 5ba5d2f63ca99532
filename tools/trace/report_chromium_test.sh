#!/usr/bin/env bash
# The compile report as a browser renders it: `lathec report` on a real
# trace, then headless Chromium (Debian's chromium) loads the page and dumps
# its DOM, which must hold every section with its content, the fused graph
# as inline SVG when graphviz is installed, and no script (a step named
# "<script>" stays text). Also takes a screenshot. Without Chromium it
# prints "SKIP: no chromium" and passes.
#
# Usage: report_chromium_test.sh LATHEC TRACE
set -uo pipefail

lathec=$1
trace=$2
tmp=${TEST_TMPDIR:-$(mktemp -d)}

chrome=""
for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null 2>&1; then
    chrome=$(command -v "$name")
    break
  fi
done
if [ -z "$chrome" ]; then
  echo "SKIP: no chromium (apt-get install chromium)"
  exit 0
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A real trace, and one more step whose name and output are markup.
cp "$trace" "$tmp/trace.jsonl"
printf '%s\n' '{"step":"<script>document.title=\"pwned\"</script>","seconds":0.001,"made":[{"kind":"text","title":"<b>bold?</b>","text":"<img src=x onerror=alert(1)>"}]}' \
  >>"$tmp/trace.jsonl"
"$lathec" report "$tmp/trace.jsonl" -o "$tmp/report.html" ||
  fail "lathec report failed"

# Headless Chromium: no GPU, no sandbox (tests may run as root), its own
# profile, and no network to reach for anyway.
run_chrome() {
  timeout 120 "$chrome" --headless --disable-gpu --no-sandbox \
    --no-first-run --no-default-browser-check --disable-extensions \
    --user-data-dir="$tmp/profile" "$@" "file://$tmp/report.html" \
    2>"$tmp/chrome.log"
}
run_chrome --dump-dom >"$tmp/dom.html" ||
  { cat "$tmp/chrome.log" >&2; fail "chromium --dump-dom failed"; }
[ -s "$tmp/dom.html" ] || fail "chromium dumped an empty DOM"

expect() {
  grep -qF -- "$1" "$tmp/dom.html" || fail "the rendered page lacks: $1"
}
for id in timeline passes kernels fusion-graph guards build other; do
  expect "<section id=\"$id\">"
done
expect 'class="bar"'                                   # the timeline
expect 'reinplace'                                     # a pass ...
expect '<span class="del">'                            # ... and its diff
expect 'loop_ir_scheduled.txt'                         # the kernels
expect 'fuse k2 into k1'                               # the fusion log
expect 'lathe_call'                                    # the source
expect 't0.size(0) == 4'                               # the guards
expect '-march=native'                                 # the build command
expect '&lt;script&gt;document.title'                  # markup stays text
expect '&lt;img src=x onerror=alert(1)&gt;'
if grep -qi '<script' "$tmp/dom.html"; then fail "a <script> element rendered"; fi
if grep -qi '<img' "$tmp/dom.html"; then fail "an <img> element rendered"; fi
if grep -q '<title>pwned' "$tmp/dom.html"; then fail "a script ran"; fi

if command -v dot >/dev/null 2>&1; then
  # The fused graph as a picture: one cluster per kernel.
  expect '<div class="svg"><svg'
  expect 'cluster_k1'
  echo "graphviz found: the fused graph is inline SVG"
else
  expect 'was not found'
  echo "no graphviz: the fused graph is shown as Graphviz text"
fi

run_chrome --screenshot="$tmp/report.png" --window-size=1280,2000 \
  >/dev/null || fail "chromium --screenshot failed"
[ -s "$tmp/report.png" ] || fail "no screenshot"
if [ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]; then
  cp "$tmp/report.png" "$tmp/report.html" "$TEST_UNDECLARED_OUTPUTS_DIR/"
fi
echo "PASS: every section rendered ($(wc -c <"$tmp/dom.html") bytes of DOM)"
